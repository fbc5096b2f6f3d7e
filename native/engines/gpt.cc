#include "engines/gpt.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/kernels.h"
#include "threadpool.h"

namespace weightmap {
namespace engines {

GptSession::GptSession(const GptConfig& config, const GptWeights& weights)
    : config_(config), weights_(weights), cache_(config.n_layers, config.dim, config.max_seq) {}

void GptSession::Rewind(int64_t pos) {
  if (pos < 0 || pos > pos_) throw std::out_of_range("rewind position " + std::to_string(pos) + " is outside [0, " + std::to_string(pos_) + "]");
  pos_ = pos;
}

void GptSession::Reset() {
  pos_ = 0;
  cache_.Release();
}

bool GptSession::Forward(ThreadPool& pool, const int32_t* tokens, int64_t n, bool all_logits, float* logits,
                         const std::atomic<bool>* abort) {
  const GptConfig& c = config_;
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
    const float* e = weights_.tok_emb + static_cast<int64_t>(tokens[i]) * d;
    const float* p = weights_.pos_emb + (pos_ + i) * d;
    for (int64_t j = 0; j < d; j++) x[i * d + j] = e[j] + p[j];
  }

  AttentionShape shape{n, pos_, pos_ + n, H, dh, d, d, 0, 1.0f / std::sqrt(static_cast<float>(dh))};
  for (int64_t l = 0; l < c.n_layers; l++) {
    if (abort && abort->load(std::memory_order_relaxed)) return false;
    const GptLayer& w = weights_.layers[l];
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
  if (abort && abort->load(std::memory_order_relaxed)) return false;

  // No final LayerNorm: logits = X·W_out.
  if (all_logits) {
    MatmulF32(pool, x, weights_.w_out, logits, n, d, V);
  } else {
    MatmulF32(pool, x + (n - 1) * d, weights_.w_out, logits, 1, d, V);
  }
  pos_ += n;
  return true;
}

}  // namespace engines
}  // namespace weightmap
