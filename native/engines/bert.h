// BERT sentence encoders (MiniLM and its kin; FORMATS.md §3.7, Hugging Face semantics):
// embeddings + LayerNorm, post-LN blocks with bidirectional attention, erf GELU (nomic-bert:
// rotary positions, SwiGLU, no biases; Config), then pooling
// (mean over the tokens, the [CLS] row, or the elementwise max) and optional L2 normalization.
// Cross-encoders (BertForSequenceClassification) run the same layers, with a token type per
// token, then their head on the [CLS] row: the pooler (dense + tanh; a llama.cpp GGUF drops it)
// and the classifier, one logit per label (Classify).
//
// A batch is packed: the tokens of all its sequences are stacked into one [N, H] matrix
// (N = Σ lengths, no padding rows), so every linear layer runs as one GEMM over N rows and
// attention runs per sequence over that sequence's own keys. This equals right-padding with the
// padded keys masked out, without computing the padding. The kernels compute every output row
// from its own input row only, so a text gets the same vector alone or in any batch.
//
// Weights: f16 stays in the mapping (hgemm_trans); f32 and every other dtype is copied once into
// f32 panels (sgemm_packed: no packing per call, which a small batch cannot amortize). Two int8
// options quantize every linear layer once at load instead:
// Q8_0 (groups of 32, matmul_q8) or per-channel int8 (gemm_i8, the fast one: one scale per output
// channel and per activation row, so the inner loop is int8 dot products only).
// Pure C++: the N-API glue is native/napi/bert_napi.cc.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "engines/weights_spec.h"
#include "kernels/f32_matrix.h"
#include "kernels/i8_matrix.h"
#include "threadpool.h"

namespace weightmap {
namespace bert {

struct Config {
  int64_t hidden = 0;         // H
  int64_t layers = 0;
  int64_t heads = 0;          // head_dim = H / heads
  int64_t intermediate = 0;   // I, the FFN width
  int64_t vocab = 0;
  int64_t max_positions = 0;  // rows of the position table
  int64_t position_offset = 0;  // the first position row (XLM-RoBERTa: padding_idx + 1); sequences hold up to max_sequence()
  int64_t type_vocab = 0;     // rows of the token-type table (type 0 unless Classify is given types)
  float eps = 1e-12f;         // every LayerNorm
  bool gelu_tanh = false;     // false: erf GELU (HF "gelu")
  // nomic-bert: rotary positions (NeoX halves, over the whole head) on q and k instead of a
  // position table; a SwiGLU feed-forward (silu(x·Wgᵀ) ⊙ (x·W1ᵀ) then W2); absent biases are 0.
  bool rotary = false;
  float rope_base = 10000.0f;
  bool swiglu = false;
  int64_t labels = 0;         // classifier outputs; 0: no head (an embedder)
  bool pooler = false;        // the head starts with pooler.dense + tanh (labels > 0 only)

  int64_t head_dim() const { return hidden / heads; }
  int64_t max_sequence() const { return max_positions - position_offset; }  // rotary: max_positions
  // Throws SpecError CONFIG_MISMATCH for values the engine cannot run.
  void Validate() const;
};

enum class Pooling { Mean, Cls, Max };

enum class Quant {
  None,  // weights as stored (f32 or f16)
  Q8_0,  // int8 in groups of 32 with a scale each, activations likewise
  Int8,  // int8 with one scale per output channel, activations one scale per row
};

struct Options {
  int threads = 0;  // 0: physical cores
  Quant quant = Quant::None;
};

// What preparing the weights copied (reported to JS).
struct LoadCost {
  uint64_t copied_bytes = 0;  // owned copies: vectors, converted or quantized matrices
  int converted = 0;          // matrices not used in place
};

// A linear layer's weight W [rows, cols] (HF [out,in], y = x·Wᵀ) in the form a kernel takes.
struct Linear {
  enum class Kind { F32, F16, Q8, I8 };
  Kind kind = Kind::F32;
  int64_t rows = 0, cols = 0;
  const uint16_t* h = nullptr;  // F16 [rows, cols]
  const int8_t* q = nullptr;    // Q8 [rows, cols]
  const float* s = nullptr;     // Q8 scales [rows, cols / group]
  int group = 0;
  std::unique_ptr<kernels::F32Matrix> f32;  // F32: packed panels
  std::unique_ptr<kernels::I8Matrix> i8;    // I8: packed per-channel int8
  // Copies made at load when the stored bytes cannot be used as they are (moves keep the
  // pointers above valid: a moved vector keeps its buffer).
  std::vector<int8_t> q_own;
  std::vector<float> s_own;
};

struct Layer {
  Linear wq, wk, wv, wo;  // [H, H]
  Linear w1;              // [I, H] intermediate.dense (SwiGLU: the up projection)
  Linear wg;              // [I, H] intermediate.gate (SwiGLU only)
  Linear w2;              // [H, I] output.dense
  std::vector<float> bq, bk, bv, bo;  // [H]
  std::vector<float> b1;              // [I]
  std::vector<float> b2;              // [H]
  std::vector<float> ln1_g, ln1_b;    // [H] attention.output.LayerNorm
  std::vector<float> ln2_g, ln2_b;    // [H] output.LayerNorm
};

class Model {
 public:
  ~Model();

  // Checks every tensor against the config and prepares the matrices. Throws SpecError.
  static std::shared_ptr<Model> Load(const Config& config, std::shared_ptr<const WeightsSpec> spec,
                                     const Options& options);

  // Encodes n_seq sequences whose ids lie one after another in ids[Σ lengths] and writes one
  // pooled vector per sequence to out[n_seq, H]. Every length must be in [1, max_sequence()] and
  // every id in [0, vocab) (the N-API layer checks). Thread-safe: each call has its own scratch,
  // concurrent calls share the thread pool. Checks `abort` between layers (throws EngineError ABORT_ERR).
  // The activation buffers of a call are kept for the next one (each concurrent call has its
  // own), so the memory of the largest batch stays with the model until it is destroyed.
  void Encode(const int32_t* ids, const int32_t* lengths, int64_t n_seq, Pooling pooling, bool normalize, float* out,
              const std::atomic<bool>& abort) const;

  // The classification head's logits for each sequence, out[n_seq, labels]: classifier(tanh(
  // pooler(h_cls))) with h_cls the sequence's first row (classifier(h_cls) without a pooler).
  // `types` (one per id, each in [0, type_vocab); null: all 0) pick the token-type rows.
  // Same contract as Encode otherwise; a model loaded with labels = 0 throws CONFIG_MISMATCH.
  void Classify(const int32_t* ids, const int32_t* types, const int32_t* lengths, int64_t n_seq, float* out,
                const std::atomic<bool>& abort) const;

  const Config& config() const { return config_; }
  const LoadCost& cost() const { return cost_; }
  double load_ms() const { return load_ms_; }
  int threads() const { return pool_->size(); }
  Quant quant() const { return quant_; }

 private:
  Model() = default;
  struct Scratch;  // one call's activations (bert.cc)
  struct Lease;    // a Scratch taken for one call (bert.cc)
  std::unique_ptr<Scratch> TakeScratch() const;
  void ReturnScratch(std::unique_ptr<Scratch> scratch) const;

  // The layers over a packed batch: leaves the last hidden states in s.x [N, H] and each
  // sequence's first row in `starts`.
  void Layers(const int32_t* ids, const int32_t* types, const int32_t* lengths, int64_t n_seq, Scratch& s,
              std::vector<int64_t>& starts, const std::atomic<bool>& abort) const;

  // ctx [N, H] = softmax(q·kᵀ/√hd)·v per sequence and head, for q, k, v [N, H] of a packed batch
  // whose sequence i occupies rows [starts[i], starts[i] + lengths[i]).
  void Attention(const float* q, const float* k, const float* v, float* ctx, const int64_t* starts,
                 const int32_t* lengths, int64_t n_seq) const;

  Config config_;
  std::shared_ptr<const WeightsSpec> spec_;  // keeps the mappings (and the tables below) alive
  const TensorRef* word_ = nullptr;          // [vocab, H], rows read per token
  const TensorRef* position_ = nullptr;      // [max_positions, H]; null with rotary
  std::vector<float> rope_cos_, rope_sin_;   // rotary: [max_positions, head_dim / 2]
  std::vector<float> zero_i_;                // [I] zeros: the SwiGLU gate's (absent) bias
  std::vector<float> types_;                 // [type_vocab, H] token-type rows
  std::vector<float> emb_ln_g_, emb_ln_b_;   // [H] embeddings.LayerNorm
  std::vector<Layer> layers_;
  // The classification head (labels > 0), f32 whatever the quant: it runs on one row per sequence.
  std::vector<float> pooler_w_, pooler_b_;   // [H, H], [H]
  std::vector<float> cls_w_, cls_b_;         // [labels, H], [labels]
  std::unique_ptr<ThreadPool> pool_;
  Quant quant_ = Quant::None;
  mutable std::mutex scratch_mu_;
  mutable std::vector<std::unique_ptr<Scratch>> spare_scratch_;
  LoadCost cost_;
  double load_ms_ = 0;
};

}  // namespace bert
}  // namespace weightmap
