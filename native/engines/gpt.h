// The TLLM GPT-style model (FORMATS.md §1.5): learned absolute positions, pre-LN blocks with
// LayerNorm, causal attention without biases, GELU (tanh) FFN with biases, no final LayerNorm.
// Every matrix is f32 [in,out] and is used in place (y = x·W through sgemm).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "engines/block_ops.h"

namespace weightmap {

class ThreadPool;

namespace engines {

struct GptConfig {
  int64_t dim = 0;       // d
  int64_t n_layers = 0;  // L
  int64_t n_heads = 0;   // H (d % H == 0)
  int64_t ffn = 0;       // f
  int64_t max_seq = 0;   // S, rows of the position table
  int64_t vocab = 0;     // V
  float eps = 1e-5f;
};

struct GptLayer {
  const float* wq;  // [d, d]
  const float* wk;  // [d, d]
  const float* wv;  // [d, d]
  const float* wo;  // [d, d]
  const float* w1;  // [d, f]
  const float* b1;  // [f]
  const float* w2;  // [f, d]
  const float* b2;  // [d]
  const float* ln1_g;
  const float* ln1_b;
  const float* ln2_g;
  const float* ln2_b;
};

struct GptWeights {
  const float* tok_emb;  // [V, d]
  const float* pos_emb;  // [S, d]
  std::vector<GptLayer> layers;
  const float* w_out;  // [d, V]
};

// One sequence: its KV cache and scratch. Weights are borrowed; the caller keeps them mapped.
class GptSession {
 public:
  GptSession(const GptConfig& config, const GptWeights& weights);

  int64_t position() const { return pos_; }
  const GptConfig& config() const { return config_; }

  // Feeds tokens[0..n) at positions [position(), position()+n). Writes logits [n, V] when
  // all_logits, else [V] for the last token. Returns false (and keeps the position) when
  // `abort` was raised between layers. Throws std::out_of_range for a token id outside the
  // vocabulary or a sequence longer than max_seq.
  bool Forward(ThreadPool& pool, const int32_t* tokens, int64_t n, bool all_logits, float* logits,
               const std::atomic<bool>* abort);

  // Forgets every position >= pos (pos <= position()).
  void Rewind(int64_t pos);
  // Frees the KV cache; the session restarts at position 0.
  void Reset();
  int64_t cache_bytes() const { return cache_.bytes(); }

 private:
  GptConfig config_;
  GptWeights weights_;
  KvCache cache_;
  int64_t pos_ = 0;
  std::vector<float> x_, a_, q_, att_, proj_, hidden_;
};

}  // namespace engines
}  // namespace weightmap
