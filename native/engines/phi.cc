#include "engines/phi.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engines/in_place_pages.h"
#include "engines/rope.h"
#include "kernels/kernels.h"
#include "threadpool.h"

namespace weightmap {
namespace engines {

namespace {

std::vector<float> ToFloat(const uint16_t* x, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  HalfToFloat(x, y.data(), n);
  return y;
}

}  // namespace

std::shared_ptr<PhiModel> PhiModel::Load(const PhiConfig& c, std::shared_ptr<const WeightsSpec> spec, int threads) {
  const WeightsSpec& s = *spec;  // tensor names by role: lib/architectures/moondream MOONDREAM_TENSOR_ROLES
  // Every text matrix is read in place and streamed whole per token: on 2 MB pages where the file
  // is read from disk after this; the token embedding, looked up a row at a time, stays in small
  // pages.
  AdviseStreamedHugePages(s, {s.Name("wte")});
  const int64_t d = c.dim, f = c.ffn, V = c.vocab;
  PhiWeightsHalf w;
  w.wte = s.RequireF16(s.Name("wte"), {V, d});
  for (int64_t l = 0; l < c.n_layers; l++) {
    PhiLayerHalf L;
    L.ln_w = s.RequireF16(s.Name("textLn.weight", l), {d});
    L.ln_b = s.RequireF16(s.Name("textLn.bias", l), {d});
    L.qkv_w = s.RequireF16(s.Name("textQkv.weight", l), {3 * d, d});
    L.qkv_b = s.RequireF16(s.Name("textQkv.bias", l), {3 * d});
    L.proj_w = s.RequireF16(s.Name("textProj.weight", l), {d, d});
    L.proj_b = s.RequireF16(s.Name("textProj.bias", l), {d});
    L.fc1_w = s.RequireF16(s.Name("textFc1.weight", l), {f, d});
    L.fc1_b = s.RequireF16(s.Name("textFc1.bias", l), {f});
    L.fc2_w = s.RequireF16(s.Name("textFc2.weight", l), {d, f});
    L.fc2_b = s.RequireF16(s.Name("textFc2.bias", l), {d});
    w.layers.push_back(L);
  }
  w.post_ln_w = s.RequireF16(s.Name("postLn.weight"), {d});
  w.post_ln_b = s.RequireF16(s.Name("postLn.bias"), {d});
  w.lm_w = s.RequireF16(s.Name("lmHead.weight"), {V, d});
  w.lm_b = s.RequireF16(s.Name("lmHead.bias"), {V});
  auto model = std::make_shared<PhiModel>(c, w);
  model->spec_ = std::move(spec);
  model->pool_ = std::make_unique<ThreadPool>(threads);
  return model;
}

PhiModel::PhiModel(const PhiConfig& config, const PhiWeightsHalf& weights) : config_(config), half_(weights) {
  const int64_t d = config.dim;
  if (config.n_heads * config.head_dim != d) throw SpecError("CONFIG_MISMATCH", "n_heads * head_dim must equal dim");
  if (config.rotary_dim <= 0 || config.rotary_dim > config.head_dim || config.rotary_dim % 2 != 0)
    throw SpecError("CONFIG_MISMATCH", "rotary_dim must be even and in (0, head_dim]");
  layers_.resize(static_cast<size_t>(config.n_layers));
  for (int64_t l = 0; l < config.n_layers; l++) {
    const PhiLayerHalf& w = weights.layers[l];
    LayerVectors& v = layers_[l];
    v.ln_w = ToFloat(w.ln_w, d);
    v.ln_b = ToFloat(w.ln_b, d);
    v.qkv_b = ToFloat(w.qkv_b, 3 * d);
    v.proj_b = ToFloat(w.proj_b, d);
    v.fc1_b = ToFloat(w.fc1_b, config.ffn);
    v.fc2_b = ToFloat(w.fc2_b, d);
  }
  post_ln_w_ = ToFloat(weights.post_ln_w, d);
  post_ln_b_ = ToFloat(weights.post_ln_b, d);
  lm_b_ = ToFloat(weights.lm_b, config.vocab);
}

void PhiModel::Embed(const int32_t* tokens, int64_t n, float* rows) const {
  const int64_t d = config_.dim;
  for (int64_t i = 0; i < n; i++) {
    if (tokens[i] < 0 || tokens[i] >= config_.vocab)
      throw std::out_of_range("token id " + std::to_string(tokens[i]) + " is outside the vocabulary [0, " + std::to_string(config_.vocab) + ")");
    HalfToFloat(half_.wte + static_cast<int64_t>(tokens[i]) * d, rows + i * d, d);
  }
}

PhiSession::PhiSession(std::shared_ptr<const PhiModel> model)
    : model_(std::move(model)), cache_(model_->config().n_layers, model_->config().dim, model_->config().max_seq) {}

void PhiSession::Truncate(int64_t n) {
  if (n < 0 || n > pos_) throw std::out_of_range("truncate(" + std::to_string(n) + ") is outside [0, " + std::to_string(pos_) + "]");
  pos_ = n;
  tokens_.resize(static_cast<size_t>(n));
}

void PhiSession::Forward(const int32_t* tokens, const float* embeddings, int64_t n, LogitsMode mode, float* logits,
                         int64_t prefix, const std::atomic<bool>& abort) {
  const PhiModel& m = *model_;
  ThreadPool& pool = m.pool();
  const PhiConfig& c = m.config();
  const PhiWeightsHalf& w = m.half();
  const int64_t d = c.dim, f = c.ffn, V = c.vocab, H = c.n_heads, hd = c.head_dim;
  if (n <= 0) throw std::invalid_argument("Forward needs at least one input row");
  if (pos_ + n > c.max_seq)
    throw std::out_of_range("sequence of " + std::to_string(pos_ + n) + " positions exceeds max_seq_len " + std::to_string(c.max_seq));
  // Every row of a bidirectional prefix must see every key of it: the prefix is one call from 0.
  if (prefix > pos_ && (pos_ != 0 || n < prefix))
    throw std::out_of_range("a bidirectional prefix of " + std::to_string(prefix) +
                            " positions must be fed in one call from position 0 (this call covers [" + std::to_string(pos_) + ", " +
                            std::to_string(pos_ + n) + "))");

  h_.resize(n * d);
  a_.resize(n * d);
  qkv_.resize(n * 3 * d);
  att_.resize(n * d);
  proj_.resize(n * d);
  hidden_.resize(n * f);
  mlp_.resize(n * d);
  float* h = h_.data();
  if (embeddings) {
    std::memcpy(h, embeddings, sizeof(float) * n * d);
  } else {
    m.Embed(tokens, n, h);
  }
  cache_.Reserve(pos_ + n);
  // Rotary angles of every new position, computed once and applied to every head of every layer.
  const Rope rotary{c.rotary_dim, c.rope_theta, false, nullptr};
  rope_.resize(n * c.rotary_dim);
  for (int64_t i = 0; i < n; i++) rotary.Angles(pos_ + i, rope_.data() + i * c.rotary_dim);

  AttentionShape shape{n, pos_, pos_ + n, H, hd, 3 * d, d, prefix, 1.0f / std::sqrt(static_cast<float>(hd))};
  for (int64_t l = 0; l < c.n_layers; l++) {
    ThrowIfAborted(abort);
    const PhiLayerHalf& lw = w.layers[l];
    const PhiModel::LayerVectors& lv = m.layer(l);
    float* k_cache = cache_.keys(l);
    float* v_cache = cache_.values(l);
    LayerNormRows(h, lv.ln_w.data(), lv.ln_b.data(), a_.data(), n, d, c.eps);

    // qkv [n, 3d] = a·Wqkvᵀ + b: [q | k | v]; rotary on the first rotary_dim dims of q and k heads.
    MatmulF16Trans(pool, a_.data(), lw.qkv_w, qkv_.data(), n, d, 3 * d);
    AddBiasRows(qkv_.data(), lv.qkv_b.data(), n, 3 * d);
    for (int64_t i = 0; i < n; i++) {
      float* row = qkv_.data() + i * 3 * d;
      const float* cs = rope_.data() + i * c.rotary_dim;  // [cos | sin] of position pos + i
      for (int64_t hh = 0; hh < H; hh++) {
        rotary.Rotate(row + hh * hd, cs);
        rotary.Rotate(row + d + hh * hd, cs);
      }
      std::memcpy(k_cache + (pos_ + i) * d, row + d, sizeof(float) * d);
      std::memcpy(v_cache + (pos_ + i) * d, row + 2 * d, sizeof(float) * d);
    }
    Attention(pool, shape, qkv_.data(), k_cache, v_cache, att_.data());
    MatmulF16Trans(pool, att_.data(), lw.proj_w, proj_.data(), n, d, d);
    AddBiasRows(proj_.data(), lv.proj_b.data(), n, d);

    // Parallel MLP branch on the same normalized input.
    MatmulF16Trans(pool, a_.data(), lw.fc1_w, hidden_.data(), n, d, f);
    AddBiasRows(hidden_.data(), lv.fc1_b.data(), n, f);
    kernels::gelu_tanh(hidden_.data(), n * f);
    MatmulF16Trans(pool, hidden_.data(), lw.fc2_w, mlp_.data(), n, f, d);
    AddBiasRows(mlp_.data(), lv.fc2_b.data(), n, d);
    for (int64_t i = 0; i < n * d; i++) h[i] += proj_[i] + mlp_[i];
  }
  ThrowIfAborted(abort);

  if (mode != LogitsMode::kNone) {
    const int64_t first = mode == LogitsMode::kAll ? 0 : n - 1;
    const int64_t rows = n - first;
    LayerNormRows(h + first * d, m.post_ln_w().data(), m.post_ln_b().data(), a_.data(), rows, d, c.eps);
    MatmulF16Trans(pool, a_.data(), w.lm_w, logits, rows, d, V);
    AddBiasRows(logits, m.lm_b().data(), rows, V);
  }
  if (tokens) tokens_.insert(tokens_.end(), tokens, tokens + n);
  else tokens_.resize(static_cast<size_t>(pos_ + n), -1);
  pos_ += n;
}

}  // namespace engines
}  // namespace weightmap
