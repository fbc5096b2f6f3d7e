// Moondream's text model (FORMATS.md §2.4, Phi-1.5-like): word embedding, then blocks where one
// shared LayerNorm feeds a parallel attention branch (fused QKV with bias, partial rotary,
// causal) and MLP branch (GELU tanh), h = h + attn + mlp; post LayerNorm and an LM head with bias.
// Matrices are f16 [out,in] in the mapped file and are used in place through hgemm_trans.
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

struct PhiConfig {
  int64_t dim = 0;       // d
  int64_t n_layers = 0;  // L
  int64_t n_heads = 0;   // H
  int64_t head_dim = 0;  // H * head_dim == d
  int64_t rotary_dim = 0;
  float rope_theta = 10000.0f;
  int64_t ffn = 0;
  int64_t vocab = 0;
  int64_t max_seq = 0;
  float eps = 1e-5f;
};

// Pointers into the mapped file (binary16 values).
struct PhiLayerHalf {
  const uint16_t* ln_w;    // [d]
  const uint16_t* ln_b;    // [d]
  const uint16_t* qkv_w;   // [3d, d]
  const uint16_t* qkv_b;   // [3d]
  const uint16_t* proj_w;  // [d, d]
  const uint16_t* proj_b;  // [d]
  const uint16_t* fc1_w;   // [ffn, d]
  const uint16_t* fc1_b;   // [ffn]
  const uint16_t* fc2_w;   // [d, ffn]
  const uint16_t* fc2_b;   // [d]
};

struct PhiWeightsHalf {
  const uint16_t* wte;  // [V, d]
  std::vector<PhiLayerHalf> layers;
  const uint16_t* post_ln_w;  // [d]
  const uint16_t* post_ln_b;  // [d]
  const uint16_t* lm_w;       // [V, d]
  const uint16_t* lm_b;       // [V]
};

// The weights of one model and its thread pool, shared by its sessions. The vectors (norms,
// biases: O(d) per layer) are converted to f32 once here; the matrices stay f16 in the mapping.
class PhiModel {
 public:
  // Checks every tensor of `spec` (the canonical names of lib/architectures/moondream.ts, text
  // matrices [out,in]) against `config`; throws SpecError. threads 0: physical cores.
  static std::shared_ptr<PhiModel> Load(const PhiConfig& config, std::shared_ptr<const WeightsSpec> spec, int threads);

  PhiModel(const PhiConfig& config, const PhiWeightsHalf& weights);
  const PhiConfig& config() const { return config_; }
  ThreadPool& pool() const { return *pool_; }
  int threads() const { return pool_->size(); }
  const PhiWeightsHalf& half() const { return half_; }

  struct LayerVectors {
    std::vector<float> ln_w, ln_b, qkv_b, proj_b, fc1_b, fc2_b;
  };
  const LayerVectors& layer(int64_t l) const { return layers_[l]; }
  const std::vector<float>& post_ln_w() const { return post_ln_w_; }
  const std::vector<float>& post_ln_b() const { return post_ln_b_; }
  const std::vector<float>& lm_b() const { return lm_b_; }

  // rows[i] = wte[tokens[i]] as f32, rows [n, d]. Throws std::out_of_range for a bad id.
  void Embed(const int32_t* tokens, int64_t n, float* rows) const;

 private:
  PhiConfig config_;
  std::shared_ptr<const WeightsSpec> spec_;  // keeps the mappings behind half_ alive
  std::unique_ptr<ThreadPool> pool_;
  PhiWeightsHalf half_;
  std::vector<LayerVectors> layers_;
  std::vector<float> post_ln_w_, post_ln_b_, lm_b_;
};

enum class LogitsMode { kNone, kLast, kAll };

class PhiSession {
 public:
  explicit PhiSession(std::shared_ptr<const PhiModel> model);

  int64_t position() const { return pos_; }
  int64_t context_length() const { return model_->config().max_seq; }
  const PhiConfig& config() const { return model_->config(); }
  const PhiModel& model() const { return *model_; }

  // Feeds n input rows at positions [position(), position()+n): `embeddings` [n, d] (token
  // embeddings, image embeddings, or both) when non-null, else the embeddings of tokens[0..n).
  // With embeddings, `tokens` (or null: -1, no token) names the rows in tokens().
  // Logits: none, [V] for the last row, or [n, V]. Positions < prefix attend to each other
  // bidirectionally (Moondream's image prefix); such a prefix must be fed in the same call as
  // position prefix-1. Throws EngineError ABORT_ERR when `abort` was raised (the position does
  // not move).
  void Forward(const int32_t* tokens, const float* embeddings, int64_t n, LogitsMode mode, float* logits, int64_t prefix,
               const std::atomic<bool>& abort);

  // Forgets every position from n on (n <= position()).
  void Truncate(int64_t n);
  // The token ids at positions [0, position()), oldest first (for the sampler's penalties).
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int64_t cache_bytes() const { return cache_.bytes(); }
  int64_t allocated_cache_bytes() const { return cache_bytes(); }  // KvCache grows as it fills: what it holds now

 private:
  std::shared_ptr<const PhiModel> model_;
  KvCache cache_;
  int64_t pos_ = 0;
  std::vector<int32_t> tokens_;  // [pos_]
  std::vector<float> h_, a_, qkv_, att_, proj_, hidden_, mlp_, rope_;
};

}  // namespace engines
}  // namespace weightmap
