#include "kernels/read_probe.h"

#if WEIGHTMAP_KERNELS_X86

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 flags the deliberately undefined vectors inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

namespace weightmap {
namespace kernels {

uint64_t SumBlocksAvx512(const uint8_t* base, int64_t* next, int64_t w1, int64_t prefetch) {
  int64_t w = *next;
  __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
  const uint8_t* end = base + w1 * 8;
  for (; w + 32 <= w1; w += 32) {  // 256 bytes: four 64-byte loads into four independent sums
    const uint8_t* p = base + w * 8;
    if (prefetch > 0 && p + prefetch + 256 <= end)
      for (int l = 0; l < 4; ++l) _mm_prefetch(reinterpret_cast<const char*>(p + prefetch + 64 * l), _MM_HINT_T0);
    s0 = _mm512_add_epi64(s0, _mm512_loadu_si512(p));
    s1 = _mm512_add_epi64(s1, _mm512_loadu_si512(p + 64));
    s2 = _mm512_add_epi64(s2, _mm512_loadu_si512(p + 128));
    s3 = _mm512_add_epi64(s3, _mm512_loadu_si512(p + 192));
  }
  *next = w;
  return uint64_t(_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3))));
}

}  // namespace kernels
}  // namespace weightmap

#endif  // WEIGHTMAP_KERNELS_X86
