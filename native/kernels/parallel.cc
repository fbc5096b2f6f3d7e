#include "kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

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

// Blocks per thread's range in ParallelRowBlocks: small enough that the threads finish within
// one block of each other, large enough (>= 16 KB of int8 weights per block at 1024 columns) that
// claiming one costs nothing.
constexpr int64_t kBlocksPerRange = 8;
// And at most this many grains per block (512 rows at grain 16: 512 KB of int8 weights at 1024
// columns): the threads finish within one block of each other, and a tied classifier (151936 rows)
// in 8 blocks per range left up to 9.7 MB (~0.2 ms) to one thread while the other waited.
constexpr int64_t kMaxBlockGrains = 32;
constexpr int64_t kMaxRanges = 64;  // more threads than this only help the first 64 ranges

// One thread's range of blocks [lo, hi), claimed from the front by its owner and from the back by
// the others: both ends packed in one word so that a claim is one compare-and-swap.
struct alignas(64) BlockRange {
  std::atomic<uint64_t> ends{0};
  static uint64_t Pack(uint32_t lo, uint32_t hi) { return uint64_t(lo) | (uint64_t(hi) << 32); }
  // The next block from the front (owner) or the back (others), or -1 when none is left.
  int64_t Claim(bool front) {
    uint64_t cur = ends.load(std::memory_order_relaxed);
    for (;;) {
      const uint32_t lo = uint32_t(cur), hi = uint32_t(cur >> 32);
      if (lo >= hi) return -1;
      const uint64_t next = front ? Pack(lo + 1, hi) : Pack(lo, hi - 1);
      if (ends.compare_exchange_weak(cur, next, std::memory_order_relaxed)) return front ? lo : hi - 1;
    }
  }
};

}  // namespace

void ParallelRowBlocks(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int threads = pool ? pool->size() : 1;
  const int64_t units = (n + grain - 1) / grain;
  if (threads <= 1 || units < 2) {
    fn(0, n);
    return;
  }
  const int64_t ranges = std::min<int64_t>(std::min<int64_t>(threads, units), kMaxRanges);
  // Block size in grains: about kBlocksPerRange blocks per range; blocks counted in uint32.
  int64_t block = std::min(kMaxBlockGrains, std::max<int64_t>(1, units / (ranges * kBlocksPerRange)));
  while ((units + block - 1) / block > int64_t(UINT32_MAX)) block *= 2;
  const int64_t blocks = (units + block - 1) / block;
  BlockRange state[kMaxRanges];
  for (int64_t r = 0; r < ranges; ++r)
    state[r].ends.store(BlockRange::Pack(uint32_t(blocks * r / ranges), uint32_t(blocks * (r + 1) / ranges)),
                        std::memory_order_relaxed);
  auto run = [&](int64_t b) { fn(b * block * grain, std::min(n, (b + 1) * block * grain)); };
  pool->ParallelFor(ranges, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t b; (b = state[c].Claim(true)) >= 0;) run(b);
      // Then help the others, nearest range first, from their back ends.
      for (int64_t d = 1; d < ranges; ++d)
        for (int64_t b; (b = state[(c + d) % ranges].Claim(false)) >= 0;) run(b);
    }
  });
}

void MatvecQ8(ThreadPool* pool, const KernelTable& t, const int8_t* wq, const float* ws, const int8_t* xq,
              const float* xs, float* y, int64_t rows, int64_t cols, int group) {
  if (rows * cols < kMinParallelRowWork || !pool || pool->size() <= 1) {
    t.matvec_q8(wq, ws, xq, xs, y, cols, group, 0, rows);
    return;
  }
  // x prepared once for every row block (matvec_q8 would redo it per block); bitwise matvec_q8.
  std::vector<uint8_t> prep(size_t(t.q8_rows_prep_bytes(1, cols, group)) + 64);
  uint8_t* at = prep.data() + (64 - reinterpret_cast<uintptr_t>(prep.data()) % 64) % 64;
  t.q8_rows_prepare(xq, xs, 1, cols, group, at);
  ParallelRowBlocks(pool, rows, 16,
                    [&](int64_t r0, int64_t r1) { t.matvec_q8_prepared(wq, ws, at, y, 1, cols, rows, group, r0, r1); });
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

void SgemmPacked(ThreadPool* pool, const KernelTable& t, const float* x, int64_t m, const F32Panels& w,
                 const float* bias, float* y, int64_t ldy) {
  // Grains of 4 panels (64 channels): whole register tiles for every table.
  Split(pool, w.panels(), 4, m * w.n * w.k,
        [&](int64_t p0, int64_t p1) { t.sgemm_packed(x, m, w, bias, y, ldy, p0, p1); });
}

void GemmI8(ThreadPool* pool, const KernelTable& t, const uint8_t* xq, const float* xs, int64_t m, int64_t ldx,
            const I8Weights& w, const float* bias, float* y, int64_t ldy) {
  // Grains of 4 panels (64 channels): whole register tiles for every table.
  Split(pool, w.panels(), 4, m * w.n * w.k,
        [&](int64_t p0, int64_t p1) { t.gemm_i8(xq, xs, m, ldx, w, bias, y, ldy, p0, p1); });
}

}  // namespace kernels
}  // namespace weightmap
