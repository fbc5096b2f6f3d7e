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
void MatmulF16(ThreadPool& pool, const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n) {
  kernels::Hgemm(&pool, a, b, c, m, k, n);
}
void MatmulF16Trans(ThreadPool& pool, const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n) {
  kernels::HgemmTrans(&pool, a, b, c, m, k, n);
}

namespace {

// Keys row i sees: j <= pos0 + i, and every j < prefix when pos0 + i < prefix.
int64_t VisibleKeys(const AttentionShape& s, int64_t i) {
  const int64_t pos = s.pos0 + i;
  int64_t visible = pos + 1;
  if (pos < s.prefix) visible = std::max(visible, s.prefix);
  return std::min(visible, s.n_keys);
}

// Few query rows (decode): one task per (row, head), dot products against the keys and a
// weighted sum of the values, straight from the strided rows.
void AttentionRows(ThreadPool& pool, const AttentionShape& s, const float* q, const float* k, const float* v, float* out) {
  const kernels::KernelTable& kt = kernels::Active();
  const int64_t hd = s.head_dim;
  const int64_t out_stride = s.n_heads * hd;
  auto rows = [&](int64_t t0, int64_t t1) {
    std::vector<float> scores(static_cast<size_t>(s.n_keys));
    for (int64_t task = t0; task < t1; task++) {
      const int64_t i = task / s.n_heads;
      const int64_t h = task % s.n_heads;
      const int64_t visible = VisibleKeys(s, i);
      const float* qh = q + i * s.q_stride + h * hd;
      for (int64_t j = 0; j < visible; j++) scores[j] = kt.dot_f32(qh, k + j * s.kv_stride + h * hd, hd) * s.scale;
      kernels::softmax(scores.data(), visible);
      float* oh = out + i * out_stride + h * hd;
      std::memset(oh, 0, sizeof(float) * hd);
      for (int64_t j = 0; j < visible; j++) kt.axpy_f32(scores[j], v + j * s.kv_stride + h * hd, oh, hd);
    }
  };
  // A short context is less work than waking the other threads.
  const int64_t tasks = s.t * s.n_heads;
  if (2 * tasks * s.n_keys * hd < (int64_t(1) << 17)) {
    rows(0, tasks);
  } else {
    pool.ParallelFor(tasks, 1, rows);
  }
}

// Many query rows (prefill, vision): per head, gather Q_h [t, hd], K_hᵀ [hd, n], V_h [n, hd]
// contiguous, S = Q_h·K_hᵀ and O_h = S·V_h as plain sgemms (B [k, n]: far faster than sgemm_trans
// with a head_dim-long inner dimension), masked softmax per row in between (masked keys get
// probability 0). One head per task.
void AttentionGemm(ThreadPool& pool, const AttentionShape& s, const float* q, const float* k, const float* v, float* out) {
  const kernels::KernelTable& kt = kernels::Active();
  const int64_t hd = s.head_dim, t = s.t, n = s.n_keys;
  const int64_t out_stride = s.n_heads * hd;
  pool.ParallelFor(s.n_heads, 1, [&](int64_t h0, int64_t h1) {
    std::vector<float> qh(static_cast<size_t>(t * hd)), kt_h(static_cast<size_t>(n * hd)), vh(kt_h.size());
    std::vector<float> scores(static_cast<size_t>(t * n)), oh(qh.size());
    for (int64_t h = h0; h < h1; h++) {
      for (int64_t i = 0; i < t; i++)
        for (int64_t e = 0; e < hd; e++) qh[i * hd + e] = q[i * s.q_stride + h * hd + e] * s.scale;
      for (int64_t j = 0; j < n; j++) {
        const float* kj = k + j * s.kv_stride + h * hd;
        for (int64_t e = 0; e < hd; e++) kt_h[e * n + j] = kj[e];
        std::memcpy(&vh[j * hd], v + j * s.kv_stride + h * hd, sizeof(float) * hd);
      }
      kt.sgemm(qh.data(), kt_h.data(), scores.data(), t, hd, n, 0, n);
      for (int64_t i = 0; i < t; i++) {
        float* row = &scores[i * n];
        const int64_t visible = VisibleKeys(s, i);
        kernels::softmax(row, visible);
        std::fill(row + visible, row + n, 0.0f);
      }
      kt.sgemm(scores.data(), vh.data(), oh.data(), t, n, hd, 0, hd);
      for (int64_t i = 0; i < t; i++) std::memcpy(out + i * out_stride + h * hd, &oh[i * hd], sizeof(float) * hd);
    }
  });
}

}  // namespace

void Attention(ThreadPool& pool, const AttentionShape& s, const float* q, const float* k, const float* v, float* out) {
  // Below a few rows the gathers cost more than the GEMMs save.
  if (s.t >= 4) {
    AttentionGemm(pool, s, q, k, v, out);
  } else {
    AttentionRows(pool, s, q, k, v, out);
  }
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

void HalfToFloat(const uint16_t* x, float* y, int64_t n) { kernels::Active().f16_to_f32(x, y, n); }

}  // namespace engines
}  // namespace weightmap
