// Loading a decoder: every tensor checked against the config, then prepared for the kernels.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "engines/decoder/decoder.h"
#include "engines/in_place_pages.h"

namespace weightmap {
namespace decoder {

namespace {

// llama.cpp's LLAMA_MAX_EXPERTS.
constexpr int64_t kMaxExperts = 1024;

// The expert matrices' names (Qwen3-MoE): read only for the tokens routed to them, so neither
// faulted in at load nor given huge pages (the experts a model never routes to stay on disk).
std::set<std::string> ExpertNames(const DecoderConfig& c, const WeightsSpec& s) {
  std::set<std::string> out;
  for (int64_t l = 0; l < c.n_layers && c.moe(); l++)
    for (int64_t e = 0; e < c.n_experts; e++)
      for (const char* role : {"expertGate", "expertUp", "expertDown"}) out.insert(s.Name(role, l, e));
  return out;
}

// dst [rows, cols] = the transpose of src [cols, rows] (elements of type T), across the pool, in
// 32x32 tiles: a tile's 32 source rows stay in cache while its 32 output rows are written.
template <typename T>
void Transpose(const uint8_t* src_bytes, uint8_t* dst_bytes, int64_t rows, int64_t cols, ThreadPool& pool) {
  constexpr int64_t kTile = 32;
  T* dst = reinterpret_cast<T*>(dst_bytes);  // a fresh vector: aligned
  pool.ParallelFor(rows, kTile, [&](int64_t r0, int64_t r1) {
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; r++) {
        for (int64_t c = c0; c < c1; c++) {
          T v;
          std::memcpy(&v, src_bytes + (c * rows + r) * sizeof(T), sizeof(T));  // the mapping may be unaligned
          dst[r * cols + c] = v;
        }
      }
    }
  });
}

// A stacked vector per expert [rows, n] (gpt-oss's expert biases) as f32, row by row.
std::vector<float> LoadRows(const WeightsSpec& spec, const std::string& name, int64_t rows, int64_t n, LoadCost* cost) {
  const TensorRef& t = spec.Require(name, {rows, n});
  if (t.dtype == DType::Q8_0 || t.dtype == DType::GgmlQ8_0 || t.dtype == DType::GgmlBlocks || t.transposed)
    throw SpecError("BAD_DTYPE", "vector " + t.Describe() + " must be f32, f16 or bf16");
  std::vector<float> out(rows * n);
  for (int64_t r = 0; r < rows; r++) DequantizeRow(t, r, out.data() + r * n);
  cost->copied_bytes += rows * n * 4;
  return out;
}

}  // namespace

const TensorRef& DecoderModel::RowMajor(const TensorRef& t) {
  if (!t.transposed) return t;
  const int64_t rows = t.shape[0], cols = t.shape[1];
  std::vector<uint8_t>& bytes = transposed_bytes_.emplace_back(t.byte_length);
  // The spec admits only f32, f16 and bf16 transposed.
  if (t.dtype == DType::F32) Transpose<uint32_t>(t.data, bytes.data(), rows, cols, *pool_);
  else Transpose<uint16_t>(t.data, bytes.data(), rows, cols, *pool_);
  TensorRef& copy = transposed_refs_.emplace_back(t);
  copy.transposed = false;
  copy.data = bytes.data();
  cost_.copied_bytes += t.byte_length;
  cost_.converted++;
  return copy;
}

void DecoderConfig::Validate() const {
  auto fail = [](const std::string& what) { throw SpecError("CONFIG_MISMATCH", what); };
  if (dim <= 0 || intermediate <= 0 || n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 || head_dim <= 0 || vocab <= 0 ||
      max_seq_len <= 0)
    fail("decoder sizes must be positive");
  if (n_heads % n_kv_heads != 0)
    fail("numHeads (" + std::to_string(n_heads) + ") is not a multiple of numKvHeads (" + std::to_string(n_kv_heads) + ")");
  if (head_dim % 2 != 0) fail("headDim must be even for RoPE, found " + std::to_string(head_dim));
  if (vocab > INT32_MAX) fail("vocabSize does not fit token ids");
  if (!(eps > 0) || !(theta > 0)) fail("rmsNormEps and ropeTheta must be positive");
  if (rope_dim < 0 || rope_dim > head_dim || rope_dim % 2 != 0)
    fail("ropeDim must be even and at most headDim (" + std::to_string(head_dim) + "), found " + std::to_string(rope_dim));
  const int64_t rotated = rope_dim > 0 ? rope_dim : head_dim;
  if (!rope_freqs.empty() && static_cast<int64_t>(rope_freqs.size()) != rotated / 2)
    fail("ropeFreqFactors has " + std::to_string(rope_freqs.size()) + " values, one per rotated pair (" +
         std::to_string(rotated / 2) + ") expected");
  for (float f : rope_freqs)
    if (!(f > 0) || !std::isfinite(f)) fail("ropeFreqFactors must be positive and finite");
  if (sliding_window < 0 || swa_pattern < 0) fail("slidingWindow and slidingWindowPattern must not be negative");
  if (n_experts < 0 || n_experts > kMaxExperts || (n_experts == 0) != (n_experts_used == 0) || n_experts_used < 0 ||
      n_experts_used > n_experts || (n_experts > 0 && expert_intermediate <= 0))
    fail("numExperts must be in [0, " + std::to_string(kMaxExperts) + "], numExpertsPerToken in [1, numExperts] with " +
         "experts (found " + std::to_string(n_experts) + " and " + std::to_string(n_experts_used) +
         "), expertIntermediateSize positive");
  if (!(yarn_factor >= 0) || !std::isfinite(yarn_factor) || (yarn_factor > 0 && (yarn_orig_ctx <= 0 || !(yarn_beta_fast > 0) ||
      !(yarn_beta_slow > 0) || !std::isfinite(yarn_attn_factor))) || !(swiglu_limit >= 0) || !std::isfinite(swiglu_limit))
    fail("ropeYarnFactor needs a positive original context and betas; swigluLimit must not be negative");
  if ((expert_bias || swiglu_limit > 0) && !moe())
    fail("expert routing options need numExperts");
  if (!(theta_local >= 0) || !std::isfinite(norm_offset) || !(embed_scale > 0) || !std::isfinite(embed_scale) ||
      !(attn_scalar >= 0) || !std::isfinite(attn_scalar))
    fail("ropeLocalTheta, normWeightOffset, embeddingScale and queryPreAttnScalar must be finite (the scales positive)");
}

std::shared_ptr<DecoderModel> DecoderModel::Load(const DecoderConfig& config, std::shared_ptr<const WeightsSpec> spec,
                                                 const DecoderOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  config.Validate();
  if (options.quant == WeightQuant::Q8 && (options.group_size <= 0 || options.group_size > 4096))
    throw SpecError("CONFIG_MISMATCH", "groupSize must be in [1, 4096]");

  auto model = std::shared_ptr<DecoderModel>(new DecoderModel());
  DecoderModel& m = *model;
  m.config_ = config;
  m.spec_ = spec;
  const WeightsSpec& s = *spec;
  const DecoderConfig& c = config;

  m.first_layer_ = options.first_layer;
  m.end_layer_ = options.end_layer == 0 ? c.n_layers : options.end_layer;
  if (m.first_layer_ < 0 || m.first_layer_ >= m.end_layer_ || m.end_layer_ > c.n_layers)
    throw SpecError("CONFIG_MISMATCH", "layers [" + std::to_string(m.first_layer_) + ", " + std::to_string(m.end_layer_) +
                                           ") are not a non-empty range of the model's " + std::to_string(c.n_layers));
  m.pool_ = std::make_unique<ThreadPool>(options.threads);
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    return Matrix::Prepare(m.RowMajor(s.RequireAnyOrder(name, {rows, cols})), options.quant, options.group_size, &m.cost_, *m.pool_);
  };
  // A pipeline stage maps only its own tensors: the embedding when it embeds (or is the tied head).
  if (m.embeds() || (m.has_head() && c.tied)) {
    const TensorRef& embed = m.RowMajor(s.RequireAnyOrder(s.Name("embed"), {c.vocab, c.dim}));
    if ((embed.dtype == DType::Q8_0 || embed.dtype == DType::GgmlQ8_0) && c.dim % embed.group != 0)
      throw SpecError("SHAPE_MISMATCH", "embedding rows of " + std::to_string(c.dim) + " are not whole groups of " +
                                            std::to_string(embed.group));
    m.embed_ = &embed;
  }

  // Before any tensor is read: the matrices used in place are streamed whole every token, so 2 MB
  // pages map no byte that a token does not read; an untied embedding is looked up a row at a time
  // and stays in small pages, so that its memory is still the rows touched.
  const std::set<std::string> experts = ExpertNames(c, s);
  bool huge = false;
  std::set<std::string> partial;
  if (options.quant == WeightQuant::Keep) {
    if (!c.tied) partial.insert(s.Name("embed"));
    partial.insert(experts.begin(), experts.end());
    huge = AdviseStreamedHugePages(s, partial) > 0;
  }

  // An RMSNorm weight as the kernel multiplies by: norm_offset + w (Gemma's HF weights hold w).
  auto norm = [&](const std::string& name, int64_t n) {
    std::vector<float> w = LoadVector(s, name, n, &m.cost_);
    for (float& v : w) v += c.norm_offset;
    return w;
  };
  m.layers_.resize(c.n_layers);
  for (int64_t l = m.first_layer_; l < m.end_layer_; l++) {
    DecoderLayer& L = m.layers_[l];
    L.attn_norm = norm(s.Name("attnNorm", l), c.dim);
    // With sandwich norms (Gemma 3) post_attention_layernorm norms the attention output.
    if (c.sandwich_norms) {
      L.ffn_norm = norm(s.Name("preFfnNorm", l), c.dim);
      L.post_attn_norm = norm(s.Name("postAttnNorm", l), c.dim);
      L.post_ffn_norm = norm(s.Name("postFfnNorm", l), c.dim);
    } else {
      L.ffn_norm = norm(s.Name("ffnNorm", l), c.dim);
    }
    if (c.qk_norm) {
      L.q_norm = norm(s.Name("qNorm", l), c.head_dim);
      L.k_norm = norm(s.Name("kNorm", l), c.head_dim);
    }
    if (c.qkv_bias) {
      L.bq = LoadVector(s, s.Name("qBias", l), c.q_dim(), &m.cost_);
      L.bk = LoadVector(s, s.Name("kBias", l), c.kv_dim(), &m.cost_);
      L.bv = LoadVector(s, s.Name("vBias", l), c.kv_dim(), &m.cost_);
    }
    L.wq = matrix(s.Name("q", l), c.q_dim(), c.dim);
    L.wk = matrix(s.Name("k", l), c.kv_dim(), c.dim);
    L.wv = matrix(s.Name("v", l), c.kv_dim(), c.dim);
    L.wo = matrix(s.Name("o", l), c.dim, c.q_dim());
    if (c.o_bias) L.bo = LoadVector(s, s.Name("oBias", l), c.dim, &m.cost_);
    if (c.attn_sinks) L.sinks = LoadVector(s, s.Name("sinks", l), c.n_heads, &m.cost_);
    if (c.moe()) {
      // The router as stored (f16, f32; bf16 as f32), also under a Q8 load: its logits pick the experts.
      const WeightQuant router_quant = options.quant == WeightQuant::Q8 ? WeightQuant::Keep : options.quant;
      L.moe.router = Matrix::Prepare(m.RowMajor(s.RequireAnyOrder(s.Name("router", l), {c.n_experts, c.dim})), router_quant,
                                     options.group_size, &m.cost_, *m.pool_);
      const int64_t ffn = c.expert_intermediate;
      if (c.expert_bias) {
        L.moe.router_b = LoadVector(s, s.Name("routerBias", l), c.n_experts, &m.cost_);
        L.moe.gate_b = LoadRows(s, s.Name("expertGateBiases", l), c.n_experts, ffn, &m.cost_);
        L.moe.up_b = LoadRows(s, s.Name("expertUpBiases", l), c.n_experts, ffn, &m.cost_);
        L.moe.down_b = LoadRows(s, s.Name("expertDownBiases", l), c.n_experts, c.dim, &m.cost_);
      }
      for (int64_t e = 0; e < c.n_experts; e++) {
        L.moe.gate.push_back(matrix(s.Name("expertGate", l, e), ffn, c.dim));
        L.moe.up.push_back(matrix(s.Name("expertUp", l, e), ffn, c.dim));
        L.moe.down.push_back(matrix(s.Name("expertDown", l, e), c.dim, ffn));
      }
    } else {
      L.w_gate = matrix(s.Name("gate", l), c.intermediate, c.dim);
      L.w_up = matrix(s.Name("up", l), c.intermediate, c.dim);
      L.w_down = matrix(s.Name("down", l), c.dim, c.intermediate);
    }
  }
  if (m.has_head()) {
    m.final_norm_ = norm(s.Name("norm"), c.dim);
    const TensorRef& head = c.tied ? *m.embed_ : m.RowMajor(s.RequireAnyOrder(s.Name("lmHead"), {c.vocab, c.dim}));
    m.classifier_ = Matrix::Prepare(head, options.quant, options.group_size, &m.cost_, *m.pool_);
  }

  // The tensors used in place (not copied above: those a quant converts, bf16) made ready here, in
  // the load (while loadModel builds the tokenizer on the JS thread), rather than in the first
  // token's page faults: in pieces across the pool (one thread maps ~10 GB/s of page cache).
  if (options.quant == WeightQuant::Keep) {
    constexpr uint64_t kPiece = uint64_t(8) << 20;
    // Under huge-page advice a cold range is faulted in (2 MB folios), not read ahead (small ones).
    struct Piece {
      const uint8_t* p;
      uint64_t n;
      bool fault_in;
    };
    std::vector<Piece> pieces;
    auto add = [&](const uint8_t* p, uint64_t n, bool fault_in) {
      for (uint64_t at = 0; at < n; at += kPiece) pieces.push_back({p + at, std::min(kPiece, n - at), fault_in});
    };
    for (const auto& [name, t] : s.tensors()) {
      if (t.dtype == DType::BF16 || experts.count(name)) continue;
      const bool fault_in = huge && !partial.count(name);
      add(t.data, t.byte_length, fault_in);
      if (t.scales) add(t.scales, uint64_t(t.numel / t.group) * sizeof(float), fault_in);
    }
    // Through the mapping's claims: what loadModel's early prefault (mmap/early_prefault.h) took
    // is skipped here.
    auto prefault = [&](const Piece& piece) {
      for (const auto& mapping : s.mappings()) {
        const uint8_t* base = mapping->data();
        if (piece.p >= base && piece.p < base + mapping->size()) {
          mapping->PrefaultOnce(uint64_t(piece.p - base), piece.n, piece.fault_in);
          return;
        }
      }
      Prefault(piece.p, piece.n, piece.fault_in);
    };
    m.pool_->ParallelFor(int64_t(pieces.size()), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) prefault(pieces[i]);
    });
  }
  m.load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return model;
}

}  // namespace decoder
}  // namespace weightmap
