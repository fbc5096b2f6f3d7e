#include "kernels/read_probe.h"

#include <cstring>

#if WEIGHTMAP_KERNELS_X86
#include <emmintrin.h>
#elif WEIGHTMAP_KERNELS_ARM64
#include <arm_neon.h>
#endif

namespace weightmap {
namespace kernels {

uint64_t SumWords(const uint8_t* base, int64_t w0, int64_t w1, int64_t prefetch) {
  int64_t w = w0;
  uint64_t sum = 0;
#if WEIGHTMAP_KERNELS_X86
  if (std::strncmp(Active().isa, "avx512", 6) == 0) sum = SumBlocksAvx512(base, &w, w1, prefetch);
#endif
  const uint8_t* end = base + w1 * 8;
#if WEIGHTMAP_KERNELS_X86
  __m128i s0 = _mm_setzero_si128(), s1 = s0, s2 = s0, s3 = s0;
  for (; w + 8 <= w1; w += 8) {
    const uint8_t* p = base + w * 8;
    if (prefetch > 0 && p + prefetch + 64 <= end) _mm_prefetch(reinterpret_cast<const char*>(p + prefetch), _MM_HINT_T0);
    const __m128i* v = reinterpret_cast<const __m128i*>(p);
    s0 = _mm_add_epi64(s0, _mm_loadu_si128(v));
    s1 = _mm_add_epi64(s1, _mm_loadu_si128(v + 1));
    s2 = _mm_add_epi64(s2, _mm_loadu_si128(v + 2));
    s3 = _mm_add_epi64(s3, _mm_loadu_si128(v + 3));
  }
  uint64_t lanes[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), _mm_add_epi64(_mm_add_epi64(s0, s1), _mm_add_epi64(s2, s3)));
  sum += lanes[0] + lanes[1];
#elif WEIGHTMAP_KERNELS_ARM64
  uint64x2_t s0 = vdupq_n_u64(0), s1 = s0, s2 = s0, s3 = s0;
  for (; w + 8 <= w1; w += 8) {
    const uint8_t* p = base + w * 8;
#if defined(__GNUC__)
    if (prefetch > 0 && p + prefetch + 64 <= end) __builtin_prefetch(p + prefetch);
#endif
    const uint64_t* v = reinterpret_cast<const uint64_t*>(p);
    s0 = vaddq_u64(s0, vld1q_u64(v));
    s1 = vaddq_u64(s1, vld1q_u64(v + 2));
    s2 = vaddq_u64(s2, vld1q_u64(v + 4));
    s3 = vaddq_u64(s3, vld1q_u64(v + 6));
  }
  sum += vaddvq_u64(vaddq_u64(vaddq_u64(s0, s1), vaddq_u64(s2, s3)));
#endif
  (void)end;
  for (; w < w1; ++w) {
    uint64_t v;
    std::memcpy(&v, base + w * 8, 8);
    sum += v;
  }
  return sum;
}

}  // namespace kernels
}  // namespace weightmap
