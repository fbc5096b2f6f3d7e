#include "engines/gpt.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/kernels.h"
#include "threadpool.h"

namespace weightmap {
namespace engines {

std::shared_ptr<GptModel> GptModel::Load(const GptConfig& c, std::shared_ptr<const WeightsSpec> spec, int threads) {
  if (c.dim % c.n_heads != 0) throw SpecError("CONFIG_MISMATCH", "hidden size must be a multiple of the number of heads");
  auto model = std::make_shared<GptModel>();
  const WeightsSpec& s = *spec;
  GptWeights& w = model->weights_;
  const int64_t d = c.dim, f = c.ffn;
  // The tensor names are the spec's (lib/architectures/tllm TLLM_TENSOR_ROLES), asked by role.
  w.tok_emb = s.RequireF32(s.Name("embed"), {c.vocab, d});
  w.pos_emb = s.RequireF32(s.Name("positions"), {c.max_seq, d});
  for (int64_t l = 0; l < c.n_layers; l++) {
    GptLayer L;
    L.wq = s.RequireF32(s.Name("q", l), {d, d});
    L.wk = s.RequireF32(s.Name("k", l), {d, d});
    L.wv = s.RequireF32(s.Name("v", l), {d, d});
    L.wo = s.RequireF32(s.Name("o", l), {d, d});
    L.w1 = s.RequireF32(s.Name("fc1", l), {d, f});
    L.b1 = s.RequireF32(s.Name("fc1Bias", l), {f});
    L.w2 = s.RequireF32(s.Name("fc2", l), {f, d});
    L.b2 = s.RequireF32(s.Name("fc2Bias", l), {d});
    L.ln1_g = s.RequireF32(s.Name("ln1", l), {d});
    L.ln1_b = s.RequireF32(s.Name("ln1Bias", l), {d});
    L.ln2_g = s.RequireF32(s.Name("ln2", l), {d});
    L.ln2_b = s.RequireF32(s.Name("ln2Bias", l), {d});
    w.layers.push_back(L);
  }
  w.w_out = s.RequireF32(s.Name("lmHead"), {d, c.vocab});
  model->config_ = c;
  model->spec_ = std::move(spec);
  model->pool_ = std::make_unique<ThreadPool>(threads);
  return model;
}

GptSession::GptSession(std::shared_ptr<const GptModel> model)
    : model_(std::move(model)), cache_(model_->config().n_layers, model_->config().dim, model_->config().max_seq) {}

void GptSession::Truncate(int64_t n) {
  if (n < 0 || n > pos_) throw std::out_of_range("truncate(" + std::to_string(n) + ") is outside [0, " + std::to_string(pos_) + "]");
  pos_ = n;
  tokens_.resize(static_cast<size_t>(n));
}

void GptSession::Forward(const int32_t* tokens, int64_t n, bool all_logits, float* logits, const std::atomic<bool>& abort) {
  const GptConfig& c = model_->config();
  const GptWeights& weights = model_->weights();
  ThreadPool& pool = model_->pool();
  const int64_t d = c.dim, f = c.ffn, V = c.vocab, H = c.n_heads, dh = d / H;
  if (n <= 0) throw std::invalid_argument("Forward needs at least one token");
  if (pos_ + n > c.max_seq)
    throw std::out_of_range("sequence of " + std::to_string(pos_ + n) + " tokens exceeds max_sequence_length " + std::to_string(c.max_seq));
  for (int64_t i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= V)
      throw std::out_of_range("token id " + std::to_string(tokens[i]) + " is outside the vocabulary [0, " + std::to_string(V) + ")");

  cache_.Reserve(pos_ + n);
  x_.resize(n * d);
  a_.resize(n * d);
  q_.resize(n * d);
  att_.resize(n * d);
  proj_.resize(n * d);
  hidden_.resize(n * f);
  float* x = x_.data();

  // X[i] = E[t_i] + P[pos + i]
  for (int64_t i = 0; i < n; i++) {
    const float* e = weights.tok_emb + static_cast<int64_t>(tokens[i]) * d;
    const float* p = weights.pos_emb + (pos_ + i) * d;
    for (int64_t j = 0; j < d; j++) x[i * d + j] = e[j] + p[j];
  }

  AttentionShape shape{n, pos_, pos_ + n, H, dh, d, d, 0, 1.0f / std::sqrt(static_cast<float>(dh))};
  for (int64_t l = 0; l < c.n_layers; l++) {
    ThrowIfAborted(abort);
    const GptLayer& w = weights.layers[l];
    float* k_cache = cache_.keys(l);
    float* v_cache = cache_.values(l);
    // Attention: A = LN1(X); Q, K, V = A·W (new K/V rows go straight into the cache).
    LayerNormRows(x, w.ln1_g, w.ln1_b, a_.data(), n, d, c.eps);
    MatmulF32(pool, a_.data(), w.wq, q_.data(), n, d, d);
    MatmulF32(pool, a_.data(), w.wk, k_cache + pos_ * d, n, d, d);
    MatmulF32(pool, a_.data(), w.wv, v_cache + pos_ * d, n, d, d);
    Attention(pool, shape, q_.data(), k_cache, v_cache, att_.data());
    MatmulF32(pool, att_.data(), w.wo, proj_.data(), n, d, d);
    for (int64_t i = 0; i < n * d; i++) x[i] += proj_[i];
    // FFN: X += gelu(LN2(X)·W1 + b1)·W2 + b2
    LayerNormRows(x, w.ln2_g, w.ln2_b, a_.data(), n, d, c.eps);
    MatmulF32(pool, a_.data(), w.w1, hidden_.data(), n, d, f);
    AddBiasRows(hidden_.data(), w.b1, n, f);
    kernels::gelu_tanh(hidden_.data(), n * f);
    MatmulF32(pool, hidden_.data(), w.w2, proj_.data(), n, f, d);
    AddBiasRows(proj_.data(), w.b2, n, d);
    for (int64_t i = 0; i < n * d; i++) x[i] += proj_[i];
  }
  ThrowIfAborted(abort);

  // No final LayerNorm: logits = X·W_out.
  if (all_logits) {
    MatmulF32(pool, x, weights.w_out, logits, n, d, V);
  } else {
    MatmulF32(pool, x + (n - 1) * d, weights.w_out, logits, 1, d, V);
  }
  tokens_.insert(tokens_.end(), tokens, tokens + n);
  pos_ += n;
}

}  // namespace engines
}  // namespace weightmap
