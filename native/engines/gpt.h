// The TLLM GPT-style model (FORMATS.md §1.5): learned absolute positions, pre-LN blocks with
// LayerNorm, causal attention without biases, GELU (tanh) FFN with biases, no final LayerNorm.
// Every matrix is f32 [in,out] and is used in place (y = x·W through sgemm).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "engines/block_ops.h"
#include "engines/weights_spec.h"
#include "threadpool.h"

namespace weightmap {
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

// The weights (in place in the mapping the spec keeps alive) and the thread pool, shared by the
// model's sessions.
class GptModel {
 public:
  // Checks every tensor of `spec` (the canonical TLLM names of lib/architectures/tllm.ts, every
  // matrix stored [in,out]) against `config`; throws SpecError. threads 0: physical cores.
  static std::shared_ptr<GptModel> Load(const GptConfig& config, std::shared_ptr<const WeightsSpec> spec, int threads);

  const GptConfig& config() const { return config_; }
  const GptWeights& weights() const { return weights_; }
  ThreadPool& pool() const { return *pool_; }
  int threads() const { return pool_->size(); }

 private:
  GptConfig config_;
  std::shared_ptr<const WeightsSpec> spec_;  // keeps the mappings behind weights_ alive
  GptWeights weights_;
  std::unique_ptr<ThreadPool> pool_;
};

// One sequence: its KV cache, its token ids and scratch.
class GptSession {
 public:
  explicit GptSession(std::shared_ptr<const GptModel> model);

  int64_t position() const { return pos_; }
  int64_t context_length() const { return model_->config().max_seq; }
  const GptModel& model() const { return *model_; }

  // Feeds tokens[0..n) at positions [position(), position()+n). Writes logits [n, V] when
  // all_logits, else [V] for the last token. Throws EngineError ABORT_ERR (keeping the position)
  // when `abort` was raised between layers, std::out_of_range for a token id outside the
  // vocabulary or a sequence longer than max_seq.
  void Forward(const int32_t* tokens, int64_t n, bool all_logits, float* logits, const std::atomic<bool>& abort);

  // Forgets every position from n on (n <= position()).
  void Truncate(int64_t n);
  // The token ids at positions [0, position()), oldest first (for the sampler's penalties).
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int64_t cache_bytes() const { return cache_.bytes(); }
  int64_t allocated_cache_bytes() const { return cache_bytes(); }  // KvCache grows as it fills: what it holds now

 private:
  std::shared_ptr<const GptModel> model_;
  KvCache cache_;
  int64_t pos_ = 0;
  std::vector<int32_t> tokens_;  // [pos_]
  std::vector<float> x_, a_, q_, att_, proj_, hidden_;
};

}  // namespace engines
}  // namespace weightmap
