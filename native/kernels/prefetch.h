// Software prefetch of the weight and KV streams, shared by the kernel bodies (q8_tiles.h,
// ggml_tiles.h, ggml_two.h, gemm_tiles.h, few_rows_avx512.h): every stream prefetches the same
// distance ahead of what it is about to read, as it reads it. Prefetches never fault, so a range
// past the end of a mapping costs nothing but the lines it names; past the end of a row range it
// is the rows a thread takes next (its next block) or the tensor after.
#pragma once

#include <cstdint>

namespace weightmap {
namespace kernels {

// How far ahead every stream prefetches. Zen 5, decode at 1 thread over Qwen3-0.6B's shapes:
// Q8_0 (ajc1): none ~10% slower, 1-2 KB 3-5% slower, 8 and 16 KB no better (16 KB ~5% slower at 2
// threads); _MM_HINT_NTA, _MM_HINT_T1, T1 far plus T0 near no better. ggml blocks (interleaved in
// one process, scripts/bench/kernel-ab.js): 2 KB 8-11% slower than none, 8 KB no better for Q4_K
// and 5% slower for Q8_0. Attention's K and V: 8 KB 1.01x, 16 KB 0.96x, none 0.79x, T1 0.93x.
// Every line is prefetched: every other line (relying on an adjacent-line fetch) ran ~30% slower.
constexpr int64_t kPrefetchAheadBytes = 4096;

// Every 64-byte cache line of [p, p + bytes) towards L1 (prefetcht0 on x86, prfm pldl1keep on arm64).
inline void PrefetchLines(const void* p, int64_t bytes) {
#if defined(__GNUC__)
  const char* c = static_cast<const char*>(p);
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(c + off);
#else
  (void)p, (void)bytes;
#endif
}

// The lines kPrefetchAheadBytes past [p, p + bytes): those of the bytes about to be read.
inline void PrefetchAhead(const void* p, int64_t bytes) {
  PrefetchLines(static_cast<const char*>(p) + kPrefetchAheadBytes, bytes);
}

// The same, stopping at `end` (a stream whose next bytes belong to another one: a KV head's).
inline void PrefetchAheadBefore(const void* p, int64_t bytes, const void* end) {
  const char* ahead = static_cast<const char*>(p) + kPrefetchAheadBytes;
  const int64_t left = static_cast<const char*>(end) - ahead;
  PrefetchLines(ahead, bytes < left ? bytes : left);
}

}  // namespace kernels
}  // namespace weightmap
