#include "engines/block_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "threadpool.h"

namespace weightmap {
namespace engines {

void LayerNormRows(const float* x, const float* g, const float* b, float* y, int64_t m, int64_t n, float eps) {
  for (int64_t r = 0; r < m; r++) kernels::layernorm(x + r * n, g, b, y + r * n, n, eps);
}

void AddBiasRows(float* y, const float* bias, int64_t m, int64_t n) {
  for (int64_t r = 0; r < m; r++) {
    float* row = y + r * n;
    for (int64_t i = 0; i < n; i++) row[i] += bias[i];
  }
}

void MatmulF32(ThreadPool& pool, const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
  kernels::Sgemm(&pool, a, b, c, m, k, n);
}
void MatmulF32Trans(ThreadPool& pool, const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
  kernels::SgemmTrans(&pool, a, b, c, m, k, n);
}
void MatmulF16(ThreadPool& pool, const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n) {
  kernels::Hgemm(&pool, a, b, c, m, k, n);
}
void MatmulF16Trans(ThreadPool& pool, const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n) {
  kernels::HgemmTrans(&pool, a, b, c, m, k, n);
}

void Attention(ThreadPool& pool, const AttentionShape& s, const float* q, const float* k, const float* v, float* out) {
  const kernels::KernelTable& kt = kernels::Active();
  const int64_t hd = s.head_dim;
  const int64_t out_stride = s.n_heads * hd;
  // One task per (row, head): scores over the visible keys, softmax, weighted sum of values.
  const int64_t tasks = s.t * s.n_heads;
  pool.ParallelFor(tasks, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> scores;
    if (static_cast<int64_t>(scores.size()) < s.n_keys) scores.resize(s.n_keys);
    for (int64_t task = t0; task < t1; task++) {
      const int64_t i = task / s.n_heads;
      const int64_t h = task % s.n_heads;
      const int64_t pos = s.pos0 + i;
      int64_t visible = pos + 1;
      if (pos < s.prefix) visible = std::max(visible, s.prefix);
      visible = std::min(visible, s.n_keys);
      const float* qh = q + i * s.q_stride + h * hd;
      for (int64_t j = 0; j < visible; j++) scores[j] = kt.dot_f32(qh, k + j * s.kv_stride + h * hd, hd) * s.scale;
      kernels::softmax(scores.data(), visible);
      float* oh = out + i * out_stride + h * hd;
      std::memset(oh, 0, sizeof(float) * hd);
      for (int64_t j = 0; j < visible; j++) kt.axpy_f32(scores[j], v + j * s.kv_stride + h * hd, oh, hd);
    }
  });
}

KvCache::KvCache(int64_t n_layers, int64_t width, int64_t max_positions)
    : width_(width), max_positions_(max_positions), k_(n_layers), v_(n_layers) {}

void KvCache::Reserve(int64_t n) {
  if (n <= capacity_) return;
  int64_t cap = std::max<int64_t>(capacity_, 64);
  while (cap < n) cap *= 2;
  cap = std::min(cap, std::max(max_positions_, n));
  // resize() keeps the rows already written.
  for (auto& k : k_) k.resize(static_cast<size_t>(cap * width_));
  for (auto& v : v_) v.resize(static_cast<size_t>(cap * width_));
  capacity_ = cap;
}

void KvCache::Release() {
  for (auto& k : k_) std::vector<float>().swap(k);
  for (auto& v : v_) std::vector<float>().swap(v);
  capacity_ = 0;
}

void HalfToFloat(const uint16_t* x, float* y, int64_t n) { kernels::Active().f16_to_f32(x, y, n); }

}  // namespace engines
}  // namespace weightmap
