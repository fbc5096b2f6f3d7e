// Loading a decoder: every tensor checked against the config, then prepared for the kernels.
#include <chrono>
#include <cmath>

#include "engines/decoder.h"

namespace weightmap {
namespace decoder {

namespace {

std::string LayerName(int64_t l, const char* rest) { return "model.layers." + std::to_string(l) + "." + rest; }

// A norm weight as f32 (norms are tiny; every dtype is converted to an owned copy).
std::vector<float> LoadVector(const WeightsSpec& spec, const std::string& name, int64_t n, LoadCost* cost) {
  const TensorRef& t = spec.Require(name, {n});
  if (t.dtype == DType::Q8_0 || t.dtype == DType::GgmlQ8_0 || t.dtype == DType::GgmlBlocks)
    throw SpecError("BAD_DTYPE", "vector " + t.Describe() + " must be f32, f16 or bf16");
  std::vector<float> out(n);
  TensorRef row = t;
  row.shape = {1, n};
  DequantizeRow(row, 0, out.data());
  cost->copied_bytes += n * 4;
  return out;
}

Matrix LoadMatrix(const WeightsSpec& spec, const std::string& name, int64_t rows, int64_t cols,
                  const DecoderOptions& options, LoadCost* cost, ThreadPool& pool) {
  return Matrix::Prepare(spec.Require(name, {rows, cols}), options.quant, options.group_size, cost, pool);
}

}  // namespace

void DecoderConfig::Validate() const {
  auto fail = [](const std::string& what) { throw SpecError("CONFIG_MISMATCH", what); };
  if (dim <= 0 || hidden <= 0 || n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 || head_dim <= 0 || vocab <= 0 ||
      max_seq_len <= 0)
    fail("decoder sizes must be positive");
  if (n_heads % n_kv_heads != 0)
    fail("numHeads (" + std::to_string(n_heads) + ") is not a multiple of numKvHeads (" + std::to_string(n_kv_heads) + ")");
  if (head_dim % 2 != 0) fail("headDim must be even for RoPE, found " + std::to_string(head_dim));
  if (vocab > INT32_MAX) fail("vocabSize does not fit token ids");
  if (!(eps > 0) || !(theta > 0)) fail("rmsNormEps and ropeTheta must be positive");
  if (!rope_freqs.empty() && static_cast<int64_t>(rope_freqs.size()) != head_dim / 2)
    fail("ropeFreqFactors has " + std::to_string(rope_freqs.size()) + " values, headDim / 2 = " +
         std::to_string(head_dim / 2) + " expected");
  for (float f : rope_freqs)
    if (!(f > 0) || !std::isfinite(f)) fail("ropeFreqFactors must be positive and finite");
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
  // A pipeline stage maps only its own tensors: the embedding when it embeds (or is the tied head).
  if (m.embeds() || (m.has_head() && c.tied)) {
    const TensorRef& embed = s.Require("model.embed_tokens.weight", {c.vocab, c.dim});
    if ((embed.dtype == DType::Q8_0 || embed.dtype == DType::GgmlQ8_0) && c.dim % embed.group != 0)
      throw SpecError("SHAPE_MISMATCH", "embedding rows of " + std::to_string(c.dim) + " are not whole groups of " +
                                            std::to_string(embed.group));
    m.embed_ = &embed;
  }

  m.pool_ = std::make_unique<ThreadPool>(options.threads);
  m.layers_.resize(c.n_layers);
  for (int64_t l = m.first_layer_; l < m.end_layer_; l++) {
    DecoderLayer& L = m.layers_[l];
    L.attn_norm = LoadVector(s, LayerName(l, "input_layernorm.weight"), c.dim, &m.cost_);
    L.ffn_norm = LoadVector(s, LayerName(l, "post_attention_layernorm.weight"), c.dim, &m.cost_);
    if (c.qk_norm) {
      L.q_norm = LoadVector(s, LayerName(l, "self_attn.q_norm.weight"), c.head_dim, &m.cost_);
      L.k_norm = LoadVector(s, LayerName(l, "self_attn.k_norm.weight"), c.head_dim, &m.cost_);
    }
    if (c.qkv_bias) {
      L.bq = LoadVector(s, LayerName(l, "self_attn.q_proj.bias"), c.q_dim(), &m.cost_);
      L.bk = LoadVector(s, LayerName(l, "self_attn.k_proj.bias"), c.kv_dim(), &m.cost_);
      L.bv = LoadVector(s, LayerName(l, "self_attn.v_proj.bias"), c.kv_dim(), &m.cost_);
    }
    L.wq = LoadMatrix(s, LayerName(l, "self_attn.q_proj.weight"), c.q_dim(), c.dim, options, &m.cost_, *m.pool_);
    L.wk = LoadMatrix(s, LayerName(l, "self_attn.k_proj.weight"), c.kv_dim(), c.dim, options, &m.cost_, *m.pool_);
    L.wv = LoadMatrix(s, LayerName(l, "self_attn.v_proj.weight"), c.kv_dim(), c.dim, options, &m.cost_, *m.pool_);
    L.wo = LoadMatrix(s, LayerName(l, "self_attn.o_proj.weight"), c.dim, c.q_dim(), options, &m.cost_, *m.pool_);
    L.w_gate = LoadMatrix(s, LayerName(l, "mlp.gate_proj.weight"), c.hidden, c.dim, options, &m.cost_, *m.pool_);
    L.w_up = LoadMatrix(s, LayerName(l, "mlp.up_proj.weight"), c.hidden, c.dim, options, &m.cost_, *m.pool_);
    L.w_down = LoadMatrix(s, LayerName(l, "mlp.down_proj.weight"), c.dim, c.hidden, options, &m.cost_, *m.pool_);
  }
  if (m.has_head()) {
    m.final_norm_ = LoadVector(s, "model.norm.weight", c.dim, &m.cost_);
    const TensorRef& head = c.tied ? *m.embed_ : s.Require("lm_head.weight", {c.vocab, c.dim});
    m.classifier_ = Matrix::Prepare(head, options.quant, options.group_size, &m.cost_, *m.pool_);
  }

  m.load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return model;
}

}  // namespace decoder
}  // namespace weightmap
