#include "kernels/parallel.h"

#include "threadpool.h"

namespace weightmap {
namespace kernels {

namespace {

// Below this many multiply-adds a job is not worth waking other threads for.
constexpr int64_t kMinParallelWork = int64_t(1) << 16;

// Splits [0, n) into chunks aligned to `grain` over the pool (or runs it whole).
template <class Fn>
void Split(ThreadPool* pool, int64_t n, int64_t grain, int64_t work, const Fn& fn) {
  if (!pool || pool->size() <= 1 || work < kMinParallelWork || n <= grain) {
    fn(int64_t(0), n);
    return;
  }
  pool->ParallelFor(n, grain, fn);
}

}  // namespace

void MatvecQ8(ThreadPool* pool, const KernelTable& t, const int8_t* wq, const float* ws, const int8_t* xq,
              const float* xs, float* y, int64_t rows, int64_t cols, int group) {
  Split(pool, rows, 16, rows * cols,
        [&](int64_t r0, int64_t r1) { t.matvec_q8(wq, ws, xq, xs, y, cols, group, r0, r1); });
}

void MatmulQ8(ThreadPool* pool, const KernelTable& t, const int8_t* wq, const float* ws, const int8_t* xq,
              const float* xs, float* y, int64_t m, int64_t rows, int64_t cols, int64_t ldy, int group) {
  if (m == 1) {
    MatvecQ8(pool, t, wq, ws, xq, xs, y, rows, cols, group);
    return;
  }
  Split(pool, rows, 16, m * rows * cols,
        [&](int64_t r0, int64_t r1) { t.matmul_q8(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1); });
}

void Hgemm(ThreadPool* pool, const KernelTable& t, const float* a, const uint16_t* b, float* c, int64_t m,
           int64_t k, int64_t n) {
  Split(pool, n, 64, m * k * n, [&](int64_t n0, int64_t n1) { t.hgemm(a, b, c, m, k, n, n0, n1); });
}

void HgemmTrans(ThreadPool* pool, const KernelTable& t, const float* a, const uint16_t* b, float* c,
                int64_t m, int64_t k, int64_t n) {
  Split(pool, n, 16, m * k * n, [&](int64_t n0, int64_t n1) { t.hgemm_trans(a, b, c, m, k, n, n0, n1); });
}

void Sgemm(ThreadPool* pool, const KernelTable& t, const float* a, const float* b, float* c, int64_t m,
           int64_t k, int64_t n) {
  Split(pool, n, 64, m * k * n, [&](int64_t n0, int64_t n1) { t.sgemm(a, b, c, m, k, n, n0, n1); });
}

void SgemmTrans(ThreadPool* pool, const KernelTable& t, const float* a, const float* b, float* c, int64_t m,
                int64_t k, int64_t n) {
  Split(pool, n, 16, m * k * n, [&](int64_t n0, int64_t n1) { t.sgemm_trans(a, b, c, m, k, n, n0, n1); });
}

}  // namespace kernels
}  // namespace weightmap
