// Software prefetch of the weight and KV streams, shared by the kernel bodies (q8_tiles.h,
// ggml_tiles.h, gemm_tiles.h, few_rows_avx512.h); each stream keeps its own measured distance and
// place (where its constants are defined). Prefetches never fault, so a range past the end of a
// mapping costs nothing but the lines it names.
#pragma once

#include <cstdint>

namespace weightmap {
namespace kernels {

// Every 64-byte cache line of [p, p + bytes) towards L1 (prefetcht0 on x86, prfm pldl1keep on arm64).
inline void PrefetchLines(const void* p, int64_t bytes) {
#if defined(__GNUC__)
  const char* c = static_cast<const char*>(p);
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(c + off);
#else
  (void)p, (void)bytes;
#endif
}

// The same, stopping at `end` (a stream whose next bytes belong to another one).
inline void PrefetchLinesBefore(const void* p, int64_t bytes, const void* end) {
  const int64_t left = static_cast<const char*>(end) - static_cast<const char*>(p);
  PrefetchLines(p, bytes < left ? bytes : left);
}

}  // namespace kernels
}  // namespace weightmap
