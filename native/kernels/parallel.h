// The threaded entry points engines call: each splits the output rows (Q8_0) or output columns
// (gemms) across a ThreadPool and runs the table's single-threaded kernel on every chunk.
// `pool` may be null (run on the calling thread). Without a table argument they use Active().
// Shapes and semantics are those of the KernelTable members in kernels.h; Y/C are written whole.
#pragma once

#include <cstdint>
#include <functional>

#include "kernels/kernels.h"

namespace weightmap {

class ThreadPool;

namespace kernels {

// fn(r0, r1) over disjoint blocks of rows covering [0, n), each a multiple of `grain` (except the
// last), for memory-bound kernels of ~100 µs that are called back to back (decode matvecs).
// Every thread of the pool owns one contiguous range of about n / size() rows and works through
// it front to back (one weight stream per core) in blocks of about 1/8 of the range, 32 grains at
// most; a thread that is done takes the remaining blocks of the other ranges from their back ends. So a worker that wakes up late (tens of µs on a VM)
// leaves only the blocks it had not started to the others, instead of the caller waiting for its
// whole share. Runs on the calling thread when `pool` is null or has one thread.
void ParallelRowBlocks(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Multiply-adds under which a decode matvec (one activation row, or a few) runs on the calling
// thread: ~20-40 µs of work on one core, about what waking a sleeping worker costs on a VM (~30 µs,
// threadpool.h), so splitting it gains nothing. A 288-wide model's layer matrices (stories15M: at
// most 442k per fused call) run inline and only its classifier is split; Qwen3-0.6B's smallest
// fused call (q, k, v: 4.2M) is split as before.
constexpr int64_t kMinParallelRowWork = int64_t(1) << 20;

// y [rows] = W [rows, cols] · x (Q8_0).
void MatvecQ8(ThreadPool* pool, const KernelTable& t, const int8_t* wq, const float* ws, const int8_t* xq,
              const float* xs, float* y, int64_t rows, int64_t cols, int group);
// Y [m, ldy] (first `rows` columns) = X [m, cols] · Wᵀ, W [rows, cols] (Q8_0). m == 1 runs matvec_q8.
void MatmulQ8(ThreadPool* pool, const KernelTable& t, const int8_t* wq, const float* ws, const int8_t* xq,
              const float* xs, float* y, int64_t m, int64_t rows, int64_t cols, int64_t ldy, int group);
// C [m, n] = A [m, k] · B, B f16 [k, n] (Hgemm) or [n, k] (HgemmTrans); Sgemm* for f32 B.
void Hgemm(ThreadPool* pool, const KernelTable& t, const float* a, const uint16_t* b, float* c, int64_t m,
           int64_t k, int64_t n);
void HgemmTrans(ThreadPool* pool, const KernelTable& t, const float* a, const uint16_t* b, float* c,
                int64_t m, int64_t k, int64_t n);
void Sgemm(ThreadPool* pool, const KernelTable& t, const float* a, const float* b, float* c, int64_t m,
           int64_t k, int64_t n);
void SgemmTrans(ThreadPool* pool, const KernelTable& t, const float* a, const float* b, float* c, int64_t m,
                int64_t k, int64_t n);
// Y [m, ldy] (first w.n columns) = X [m, k] · Wᵀ + bias for packed f32 weights, the panels split
// across the pool.
void SgemmPacked(ThreadPool* pool, const KernelTable& t, const float* x, int64_t m, const F32Panels& w,
                 const float* bias, float* y, int64_t ldy);
// Y [m, ldy] (first w.n columns) = gemm_i8 of int8 activations X [m, ldx] and packed weights,
// the panels split across the pool.
void GemmI8(ThreadPool* pool, const KernelTable& t, const uint8_t* xq, const float* xs, int64_t m, int64_t ldx,
            const I8Weights& w, const float* bias, float* y, int64_t ldy);

inline void MatmulQ8(ThreadPool* pool, const int8_t* wq, const float* ws, const int8_t* xq, const float* xs,
                     float* y, int64_t m, int64_t rows, int64_t cols, int64_t ldy, int group) {
  MatmulQ8(pool, Active(), wq, ws, xq, xs, y, m, rows, cols, ldy, group);
}
inline void Hgemm(ThreadPool* pool, const float* a, const uint16_t* b, float* c, int64_t m, int64_t k,
                  int64_t n) {
  Hgemm(pool, Active(), a, b, c, m, k, n);
}
inline void HgemmTrans(ThreadPool* pool, const float* a, const uint16_t* b, float* c, int64_t m, int64_t k,
                       int64_t n) {
  HgemmTrans(pool, Active(), a, b, c, m, k, n);
}
inline void Sgemm(ThreadPool* pool, const float* a, const float* b, float* c, int64_t m, int64_t k,
                  int64_t n) {
  Sgemm(pool, Active(), a, b, c, m, k, n);
}
inline void SgemmTrans(ThreadPool* pool, const float* a, const float* b, float* c, int64_t m, int64_t k,
                       int64_t n) {
  SgemmTrans(pool, Active(), a, b, c, m, k, n);
}

inline void SgemmPacked(ThreadPool* pool, const float* x, int64_t m, const F32Panels& w, const float* bias, float* y,
                        int64_t ldy) {
  SgemmPacked(pool, Active(), x, m, w, bias, y, ldy);
}
inline void GemmI8(ThreadPool* pool, const uint8_t* xq, const float* xs, int64_t m, int64_t ldx, const I8Weights& w,
                   const float* bias, float* y, int64_t ldy) {
  GemmI8(pool, Active(), xq, xs, m, ldx, w, bias, y, ldy);
}

}  // namespace kernels
}  // namespace weightmap
