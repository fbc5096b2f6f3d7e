// The Llama / Qwen2 / Qwen3 decoder (FORMATS.md §4.5, §5.6, §7): RMSNorm, GQA, optional q/k/v
// biases (Qwen2), optional per-head QK-norm before RoPE (Qwen3), RoPE with 'half' or
// 'interleaved' pairs and optional per-frequency factors (Llama 3's rope_freqs), SwiGLU, tied or
// separate head; Mistral's sliding-window attention and Gemma 3's features (DecoderConfig's last
// fields). The layers run in decoder/pass.h, once for every way rows are fed.
// Weights stay in the mapping (see decoder/linear.h for the layouts); every session owns its KV
// cache. Pure C++: the N-API glue is native/napi/decoder_napi.cc.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engines/decoder/linear.h"
#include "engines/decoder/moe.h"
#include "engines/engine_error.h"
#include "engines/rope.h"
#include "engines/weights_spec.h"
#include "threadpool.h"

namespace weightmap {
namespace decoder {

// RoPE's pairs: (i, i + head_dim/2) (HF order) or (2i, 2i+1) (Meta, llama2.c, GGUF llama).
enum class RopePairing { Half, Interleaved };
// The FFN gate's activation: silu (SwiGLU) or tanh GELU (GeGLU).
enum class Activation { Silu, GeluTanh };

// Every field crosses from JS by the name of lib/architectures/decoder.ts's DecoderConfig through
// one row of native/napi/decoder_config.cc; its initializer here is the value of an absent field.
struct DecoderConfig {
  int64_t dim = 0;           // model width (HF hidden_size)
  int64_t intermediate = 0;  // FFN width (HF intermediate_size)
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;    // may differ from dim / n_heads (Qwen3)
  int64_t vocab = 0;
  int64_t max_seq_len = 0;
  float eps = 1e-5f;       // RMSNorm epsilon
  double theta = 10000.0;  // RoPE base
  RopePairing pairing = RopePairing::Half;
  bool tied = false;         // classifier = token embedding
  bool qk_norm = false;      // Qwen3
  bool qkv_bias = false;     // Qwen2: q/k/v projections add a bias, before RoPE
  // Empty, or head_dim / 2 factors that divide RoPE's inverse frequencies (Llama 3 scaling):
  // angle_i = pos · θ^(-2i/head_dim) / rope_freqs[i].
  std::vector<float> rope_freqs;
  // Mistral and Gemma 3 (the defaults are Llama's behaviour).
  int64_t sliding_window = 0;  // > 0: a sliding layer attends to the last sliding_window positions, itself included
  int64_t swa_pattern = 0;     // with sliding_window: layer l is global when l % swa_pattern == swa_pattern - 1 (0: none is)
  double theta_local = 0;      // RoPE base of the sliding layers (0: theta)
  float norm_offset = 0;       // every RMSNorm scales by (norm_offset + w): Gemma's HF weights hold w, scaled by 1 + w
  bool sandwich_norms = false;  // Gemma 3: RMSNorm of the attention and FFN outputs before the residual adds
  Activation activation = Activation::Silu;
  float embed_scale = 1.0f;     // token embeddings × embed_scale (Gemma: √dim)
  double attn_scalar = 0;       // attention scores × 1/√attn_scalar (0: head_dim)
  // Granite (1, or 0 for attn_scale: Llama's behaviour).
  float attn_scale = 0;      // > 0: attention scores × attn_scale instead (attention_multiplier)
  float residual_scale = 1;  // each block's output × residual_scale before its residual add
  float logits_scaling = 1;  // logits ÷ logits_scaling
  int64_t rope_dim = 0;          // Phi-4-mini: RoPE rotates the first rope_dim dims of each head (0: head_dim)
  int64_t no_rope_interval = 0;  // SmolLM3: layer l applies no RoPE when (l + 1) % no_rope_interval == 0 (0: every layer does)
  // Qwen3-MoE (decoder/moe.h): n_experts > 0 makes every layer's FFN a mixture of experts.
  int64_t n_experts = 0;
  int64_t n_experts_used = 0;       // k experts per token
  int64_t expert_intermediate = 0;  // each expert's FFN width
  bool norm_topk = false;           // the k weights renormalized to sum 1
  // gpt-oss (the defaults are the others' behaviour).
  bool expert_bias = false;   // the router and the experts' gate/up/down add biases
  float swiglu_limit = 0;     // > 0: the experts' clamped SwiGLU (moe.h) with this limit
  bool attn_sinks = false;    // a learned logit per head joins each softmax's denominator
  bool o_bias = false;        // the attention output projection adds a bias
  // EmbeddingGemma: every position of a pass attends to every position of it, a sliding layer's to
  // those within sliding_window / 2 on either side (llama.cpp's symmetric window). Such a model
  // runs only as one pass over whole sequences (PooledPass, decoder/pooled.h): Eval refuses it.
  bool bidirectional = false;
  // YaRN RoPE (engines/rope.h; yarn_factor 0: none).
  double yarn_factor = 0;
  int64_t yarn_orig_ctx = 0;
  double yarn_beta_fast = 32, yarn_beta_slow = 1, yarn_attn_factor = 1;
  bool yarn_unrounded = false;  // the correction dims not rounded (HF truncate: false)

  bool moe() const { return n_experts > 0; }

  int64_t q_dim() const { return n_heads * head_dim; }
  float ScoreScale() const {
    return attn_scale > 0 ? attn_scale : 1.0f / std::sqrt(static_cast<float>(attn_scalar > 0 ? attn_scalar : head_dim));
  }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  bool Sliding(int64_t layer) const {
    return sliding_window > 0 && (swa_pattern == 0 || layer % swa_pattern < swa_pattern - 1);
  }
  bool Rotates(int64_t layer) const { return no_rope_interval == 0 || (layer + 1) % no_rope_interval != 0; }
  double LayerTheta(int64_t layer) const { return Sliding(layer) && theta_local > 0 ? theta_local : theta; }
  // Throws SpecError CONFIG_MISMATCH for values the engine cannot run.
  void Validate() const;
};

// The RoPE of a config with base `theta` (the config's, or its sliding layers'): the first rope_dim
// (or head_dim) dims of each head rotated (the factors point into c).
inline engines::Rope RopeOf(const DecoderConfig& c, double theta) {
  engines::Rope r{c.rope_dim > 0 ? c.rope_dim : c.head_dim, theta, c.pairing == RopePairing::Interleaved,
                  c.rope_freqs.empty() ? nullptr : c.rope_freqs.data()};
  r.yarn_factor = c.yarn_factor;
  r.yarn_orig_ctx = c.yarn_orig_ctx;
  r.beta_fast = c.yarn_beta_fast;
  r.beta_slow = c.yarn_beta_slow;
  r.attn_factor = c.yarn_attn_factor;
  r.yarn_unrounded = c.yarn_unrounded;
  return r;
}

struct DecoderOptions {
  int threads = 0;  // 0: physical cores
  WeightQuant quant = WeightQuant::Keep;
  int group_size = 32;  // Q8 group when quant == Q8
  // A pipeline stage runs only layers [first_layer, end_layer) (end_layer 0: through the last).
  // It embeds token ids only when first_layer == 0 and applies the final norm and head only when
  // end_layer == n_layers; otherwise it takes, or returns, hidden states [n, dim].
  int64_t first_layer = 0;
  int64_t end_layer = 0;
};

struct DecoderLayer {
  std::vector<float> attn_norm;  // [dim]
  std::vector<float> ffn_norm;   // [dim]
  std::vector<float> q_norm;     // [head_dim] (qk_norm only)
  std::vector<float> k_norm;     // [head_dim] (qk_norm only)
  std::vector<float> bq, bk, bv;  // [q_dim], [kv_dim], [kv_dim] (qkv_bias only)
  std::vector<float> bo;          // [dim] (o_bias only)
  std::vector<float> sinks;       // [n_heads] (attn_sinks only)
  std::vector<float> post_attn_norm;  // [dim] (sandwich_norms only)
  std::vector<float> post_ffn_norm;   // [dim] (sandwich_norms only)
  Matrix wq;  // [q_dim, dim]
  Matrix wk;  // [kv_dim, dim]
  Matrix wv;  // [kv_dim, dim]
  Matrix wo;  // [dim, q_dim]
  Matrix w_gate;  // [intermediate, dim]
  Matrix w_up;    // [intermediate, dim]
  Matrix w_down;  // [dim, intermediate]
  MoeWeights moe;  // moe() only: the router and experts, in place of w_gate/w_up/w_down
};

// Element type of a session's KV cache: f32 (exact), f16 (half the memory and the traffic per
// decoded token, which grows with the context; ~1e-3 relative rounding of keys and values) or
// q8_0 (int8 with one f32 scale per kKvGroup values of a row, or per row when head_dim is not a
// multiple of it: 0.56 of f16's bytes at head_dim 128; read by the kernels' q8_gemm and q8_gemm_trans).
enum class KvType { F32, F16, Q8_0 };

class DecoderModel {
 public:
  // Checks every tensor against the config and prepares the matrices (the slow part when
  // conversions are needed). Throws SpecError.
  static std::shared_ptr<DecoderModel> Load(const DecoderConfig& config, std::shared_ptr<const WeightsSpec> spec,
                                            const DecoderOptions& options);

  const DecoderConfig& config() const { return config_; }
  const LoadCost& cost() const { return cost_; }
  double load_ms() const { return load_ms_; }
  int threads() const { return pool_->size(); }
  ThreadPool& pool() const { return *pool_; }

  const DecoderLayer& layer(int64_t l) const { return layers_[l]; }
  // The layers this model runs, [first_layer, end_layer) (all of them unless it is a pipeline stage).
  int64_t first_layer() const { return first_layer_; }
  int64_t end_layer() const { return end_layer_; }
  bool embeds() const { return first_layer_ == 0; }
  bool has_head() const { return end_layer_ == config_.n_layers; }
  const Matrix& classifier() const { return classifier_; }
  const std::vector<float>& final_norm() const { return final_norm_; }
  // The KV cache of a session by default: f16 when the matrices quantize their activations to 8
  // bits (its rounding, 2^-11 relative, adds nothing visible to theirs), else f32 (the exact
  // path stays exact).
  KvType default_kv() const {
    const MatrixKind kind = layers_[first_layer_].wq.kind();
    return kind == MatrixKind::Q8 || kind == MatrixKind::Blocks ? KvType::F16 : KvType::F32;
  }
  // x[dim] = row `token` of the token embedding, dequantized from the mapping.
  void Embed(int32_t token, float* x) const { DequantizeRow(*embed_, token, x); }

 private:
  DecoderConfig config_;
  std::shared_ptr<const WeightsSpec> spec_;  // keeps the mappings (and embed_) alive
  const TensorRef* embed_ = nullptr;         // [vocab, dim]
  std::vector<DecoderLayer> layers_;
  std::vector<float> final_norm_;  // [dim]
  Matrix classifier_;              // [vocab, dim]
  std::unique_ptr<ThreadPool> pool_;
  int64_t first_layer_ = 0;
  int64_t end_layer_ = 0;
  LoadCost cost_;
  double load_ms_ = 0;
  // Row-major copies of the matrices stored transposed, and their refs (deques: never moved).
  std::deque<std::vector<uint8_t>> transposed_bytes_;
  std::deque<TensorRef> transposed_refs_;

  // `t` in row-major order: itself, or (stored transposed) a copy transposed once here.
  const TensorRef& RowMajor(const TensorRef& t);
};

// The buffers of a pass over n rows (decoder/pass.h; a session keeps its own, grown to its largest
// batch).
struct Activations {
  int64_t capacity = 0;
  std::vector<float> x;     // [n, dim] residual stream
  std::vector<float> xb;    // [n, dim] normed input of a block
  std::vector<float> q;     // [n, q_dim]
  std::vector<float> k;     // [n, kv_dim]
  std::vector<float> v;     // [n, kv_dim]
  std::vector<float> att;   // [n, q_dim] attention output, heads concatenated
  std::vector<float> proj;  // [n, dim] output of wo / w_down before the residual add
  std::vector<float> gate;  // [n, intermediate]
  std::vector<float> up;    // [n, intermediate]
  std::vector<float> rope;  // [n, head_dim] cos of the pair angles then sin, per row
  std::vector<float> rope_local;  // the same for the sliding layers' base (theta_local set only)
  std::vector<QuantizedInput> qin;
  MoeScratch moe;  // moe() only (grown by MoeFfn)

  void Reserve(const DecoderConfig& c, int64_t n);
};

// One sequence: its KV cache and scratch. Not thread-safe: the N-API layer runs one call on a
// session at a time.
class DecoderSession {
 public:
  // one_pass: the KV cache holds one layer's keys and values, which every layer reuses: enough for a
  // session whose positions all run in one pass (PooledPass, decoder/pooled.h), which is never fed again.
  DecoderSession(std::shared_ptr<const DecoderModel> model, int64_t context_length, KvType kv = KvType::F32,
                 bool one_pass = false);

  // Appends ids[0..n) at position() and runs them through the model, prefilling in batches of at
  // most kMaxBatch tokens. Writes the logits of the last position to logits[vocab], or of every
  // position to logits[n, vocab] when `all_logits`. On abort (checked between layers) throws
  // EngineError ABORT_ERR and leaves position() as it was.
  // A model that does not end with the head (a pipeline stage) writes the hidden states of every
  // position instead, out[n, dim]; one that does not start at layer 0 takes EvalHidden instead.
  // `steps` (with all_logits): each position's logits bitwise what a one-token Eval at that
  // position computes (speculative decoding's verification: the products row by row, each row's
  // attention alone), at the cost of the batch's float-gemm and attention tiling.
  void Eval(const int32_t* ids, int64_t n, bool all_logits, float* logits, const std::atomic<bool>& abort,
            bool steps = false);
  // Eval for a model that starts past layer 0: hidden[n, dim] enters its first layer.
  void EvalHidden(const float* hidden, int64_t n, bool all_logits, float* out, const std::atomic<bool>& abort);
  // Eval of input rows [n, dim] for a model that starts at layer 0 (image embeddings): they enter
  // the first layer as they are (no embedding scale). `ids` (null: -1, no token) name them in
  // tokens(). `bidirectional`: the n rows also attend to each other (Gemma 3's image tokens), which
  // needs them in one batch (n <= kMaxBatch); earlier positions are seen as by any row, and a
  // sliding window still counts back from each row's own position.
  void EvalRows(const float* rows, const int32_t* ids, int64_t n, bool bidirectional, bool all_logits, float* out,
                const std::atomic<bool>& abort);
  // Floats Eval / EvalHidden / EvalRows write for n positions.
  int64_t OutputFloats(int64_t n, bool all_logits) const {
    return model_->has_head() ? (all_logits ? n : 1) * cfg_.vocab : n * cfg_.dim;
  }

  // Safe to read while Eval runs on another thread (it changes only when Eval returns).
  int64_t position() const { return position_.load(); }
  int64_t context_length() const { return context_; }
  KvType kv_type() const { return kv_; }
  // Bytes of the KV cache at the full context (what it can grow to).
  int64_t cache_bytes() const { return CacheBytesFor(context_); }
  // Bytes of the KV cache allocated now: it grows as positions fill (ReserveKv). Safe to read while
  // Eval runs on another thread.
  int64_t allocated_cache_bytes() const { return CacheBytesFor(kv_rows_.load()); }
  // Forgets every position from n on (n <= position()).
  void Truncate(int64_t n);
  // The token ids at positions [0, position()), oldest first (for the sampler's penalties).
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const std::shared_ptr<const DecoderModel>& model() const { return model_; }

  static constexpr int64_t kMaxBatch = 512;

 private:
  friend class BatchStep;    // decoder/batch.cc: one step over the rows of several sessions
  friend class DecoderPass;  // decoder/pass.cc: the layers over rows that carry their session
  friend class PooledPass;   // decoder/pooled.cc: several one-pass sessions' sequences in one pass

  // Eval of ids[n] or rows hidden[n, dim] (`names`: the ids of the rows in tokens(), null: -1);
  // `steps`: Eval's.
  void Run(const int32_t* ids, const float* hidden, int64_t n, bool all_logits, float* out, const std::atomic<bool>& abort,
           const int32_t* names = nullptr, bool bidirectional = false, bool steps = false);
  // One batch of n tokens at positions [pos0, pos0 + n), from ids or states [n, dim]. logits_rows: 0
  // (none), 1 (the last position) or n; rows of hidden states instead of logits without a head.
  void Forward(const int32_t* ids, const float* states, int64_t n, int64_t pos0, int64_t logits_rows, float* logits,
               const std::atomic<bool>& abort, bool bidirectional = false, bool steps = false);
  // att [n, q_dim] = causal softmax(q·kᵀ/√hd)·v for the n queries q [n, q_dim] at positions
  // [pos0, pos0 + n), against the cache of `layer` (which already holds their keys/values);
  // `bidirectional`: each query also sees the later keys of the n (Span::bidirectional).
  // parallel: across the model's pool (else on the calling thread alone: a batched step runs its
  // rows' attention side by side instead, one session per thread); the result is the same.
  void Attention(int64_t layer, int64_t pos0, int64_t n, const float* q, float* att, bool parallel = true,
                 bool bidirectional = false);
  void EnsureScratch(int64_t n);
  // Grows the KV cache to hold at least `positions` (<= context_): to twice its rows or to
  // `positions`, whichever is more, capped at context_; the rows held so far are copied.
  void ReserveKv(int64_t positions);
  int64_t CacheBytesFor(int64_t rows) const { return 2 * kv_layers_ * cfg_.n_kv_heads * rows * KvRowBytes(); }
  // The cache slot of `layer` (counted from the model's first_layer): itself, or 0 for a one-pass session.
  int64_t Slot(int64_t layer) const { return layer % kv_layers_; }
  // Values per q8_0 scale in a cached row (head_dim when it is not a multiple of kKvGroup).
  int64_t KvGroup() const { return cfg_.head_dim % kKvGroup == 0 ? kKvGroup : cfg_.head_dim; }
  // Bytes of one cached element (4 f32, 2 f16, 1 q8_0 without its scale).
  int64_t KvElementBytes() const { return kv_ == KvType::F32 ? 4 : kv_ == KvType::F16 ? 2 : 1; }
  // Bytes of one cached row (one position of one kv head): its head_dim elements, plus the f32
  // scales for q8_0.
  int64_t KvRowBytes() const {
    const int64_t hd = cfg_.head_dim;
    return hd * KvElementBytes() + (kv_ == KvType::Q8_0 ? 4 * (hd / KvGroup()) : 0);
  }
  // K and V [kv_rows_, head_dim] of one kv head of one layer (counted from the model's
  // first_layer), as T (float for an f32 cache, uint16_t for f16, int8_t for q8_0); the q8_0
  // scales of the same rows [kv_rows_, head_dim / KvGroup()].
  template <typename T>
  T* Keys(int64_t layer, int64_t kv_head) {
    return reinterpret_cast<T*>(k_cache_.get()) + (Slot(layer) * cfg_.n_kv_heads + kv_head) * kv_rows_ * cfg_.head_dim;
  }
  template <typename T>
  T* Values(int64_t layer, int64_t kv_head) {
    return reinterpret_cast<T*>(v_cache_.get()) + (Slot(layer) * cfg_.n_kv_heads + kv_head) * kv_rows_ * cfg_.head_dim;
  }
  float* KeyScales(int64_t layer, int64_t kv_head) { return k_scales_.get() + ScaleOffset(layer, kv_head); }
  float* ValueScales(int64_t layer, int64_t kv_head) { return v_scales_.get() + ScaleOffset(layer, kv_head); }
  int64_t ScaleOffset(int64_t layer, int64_t kv_head) const {
    return (Slot(layer) * cfg_.n_kv_heads + kv_head) * kv_rows_ * (cfg_.head_dim / KvGroup());
  }
  // Appends k and v [head_dim] of kv head g at position pos of `layer` (one row each).
  void StoreKv(int64_t layer, int64_t g, int64_t pos, const float* k, const float* v);

  std::shared_ptr<const DecoderModel> model_;
  const DecoderConfig& cfg_;
  int64_t context_;
  KvType kv_;
  int64_t kv_layers_;  // layer slots of the KV cache: the model's layers, or 1 (one_pass)
  std::atomic<int64_t> position_{0};
  std::vector<int32_t> tokens_;  // [position_]

  // KV cache per layer and kv head: keys and values [kv_rows_][head_dim], so a new position is
  // one contiguous row of each; attention reads them as the long side of its two gemms
  // (S = Q·Kᵀ and O = P·V). Empty until the first call; ReserveKv grows it (kv_rows_ <= context_).
  std::atomic<int64_t> kv_rows_{0};
  std::unique_ptr<uint8_t[]> k_cache_;
  std::unique_ptr<uint8_t[]> v_cache_;
  std::unique_ptr<float[]> k_scales_;  // q8_0 only
  std::unique_ptr<float[]> v_scales_;

  Activations acts_;  // of Forward's batches (allocated for the largest batch seen)
  // Attention scratch per worker slot (see decoder/attention.cc).
  std::vector<std::vector<float>> attn_scratch_;
  static constexpr int64_t kAttnTile = 32;  // tokens per work item
  static constexpr int64_t kKvGroup = 32;   // q8_0 values per scale
};

}  // namespace decoder
}  // namespace weightmap
