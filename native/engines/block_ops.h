// Row-wise building blocks shared by the gpt (TLLM), phi (Moondream text) and vit (Moondream
// vision) engines: LayerNorm over rows, bias add, multi-head attention against a KV cache, and
// column-split matrix products on a ThreadPool. All activations are f32, row-major.
#pragma once

#include <cstdint>
#include <vector>

namespace weightmap {

class ThreadPool;

namespace engines {

// y[r] = LayerNorm(x[r]; g, b, eps) for the m rows of width n (x == y allowed).
void LayerNormRows(const float* x, const float* g, const float* b, float* y, int64_t m, int64_t n, float eps);
// y[r] += bias for the m rows of width n.
void AddBiasRows(float* y, const float* bias, int64_t m, int64_t n);

// C [m, n] = A [m, k] · B for B stored [k, n] (sgemm, hgemm) or, f16, [n, k] (hgemm_trans),
// columns split across the pool (kernels/parallel.h).
void MatmulF32(ThreadPool& pool, const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n);
void MatmulF16(ThreadPool& pool, const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n);
void MatmulF16Trans(ThreadPool& pool, const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n);

// Multi-head attention of t query rows against the first n_keys rows of a key/value store.
//   q      [t, q_stride]: head h of row i at q + i*q_stride + h*head_dim
//   k, v   [n_keys, kv_stride]: head h of key j at k + j*kv_stride + h*head_dim
//   out    [t, n_heads*head_dim]
// Row i (absolute position pos0 + i) sees keys j <= pos0 + i, and when pos0 + i < prefix it sees
// every key j < prefix as well (a bidirectional prefix; prefix >= n_keys gives no mask at all).
// Scores are q·k·scale followed by a max-subtracted softmax.
struct AttentionShape {
  int64_t t, pos0, n_keys, n_heads, head_dim, q_stride, kv_stride, prefix;
  float scale;
};
void Attention(ThreadPool& pool, const AttentionShape& s, const float* q, const float* k, const float* v, float* out);

// Keys and values of every layer for positions [0, capacity), one row of `width` floats per
// position. Grows by doubling (copying what it holds) up to a fixed maximum.
class KvCache {
 public:
  KvCache(int64_t n_layers, int64_t width, int64_t max_positions);
  // Makes room for positions [0, n); n <= max_positions.
  void Reserve(int64_t n);
  float* keys(int64_t layer) { return k_[layer].data(); }
  float* values(int64_t layer) { return v_[layer].data(); }
  int64_t bytes() const { return 2 * static_cast<int64_t>(k_.size()) * capacity_ * width_ * 4; }

 private:
  int64_t width_, max_positions_, capacity_ = 0;
  std::vector<std::vector<float>> k_, v_;
};

// Converts n binary16 values to f32 (for biases, norms and embedding rows read at load or lookup).
void HalfToFloat(const uint16_t* x, float* y, int64_t n);

}  // namespace engines
}  // namespace weightmap
