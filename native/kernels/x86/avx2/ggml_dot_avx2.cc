// The ggml dot products for AVX2 + FMA + F16C ("avx2", and "avx512" on CPUs without VNNI): the
// unpacked levels u = q + offset (at most 63) times the s8 activations with vpmaddubsw, pairs
// summed by vpmaddwd, each lane starting at -offset·Σx; exact, as every pair stays below
// 2·63·127 < 2^15. The full-range levels (Q8_0, IQ4) take the sign trick instead: |q| (u8, up to
// 128) × (x with q's sign), pairs below 2·128·127 < 2^15 for x in [-127, 127].
#include "kernels/tables.h"

#if WEIGHTMAP_KERNELS_X86

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/ggml_blocks.h"
#include "kernels/prefetch.h"

namespace weightmap {
namespace kernels {
namespace {

#include "kernels/x86/ggml_ymm_tiles.h"

struct GgmlAvx2 : GgmlYmm {
  static constexpr int kRows = 4;  // 16 ymm registers
  static constexpr bool corr(int off) { return off != 0 && off != 128; }
  template <int off>
  static A dot(A acc, C u, C x) {
    __m256i pairs;
    if (off == 128) {
      const __m256i q = xor80(u);
      pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(x, q));
    } else {
      pairs = _mm256_maddubs_epi16(u, x);
    }
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  static C expand(uint32_t bits, uint8_t val) {
    // byte j takes byte j / 8 of bits, then keeps bit j % 8
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                            3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    const __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)), spread), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(char(val)));
  }
  static C test(C v, uint8_t bit, uint8_t val) {
    const __m256i b = _mm256_set1_epi8(char(bit));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, b), b), _mm256_set1_epi8(char(val)));
  }
};

#include "kernels/tiles/ggml_tiles.h"

void QuantizeAct(const float* x, int64_t n, int8_t* q, float* d, int16_t* sum) {
  Avx2Table().quantize_q8(x, n, kActBlock, q, d);
  GgmlActSums(q, n, sum);
}

}  // namespace

const GgmlKernels& Avx2Ggml() {
  static const GgmlKernels kernels = GgmlTable<GgmlAvx2>(QuantizeAct);
  return kernels;
}

}  // namespace kernels
}  // namespace weightmap

#endif  // WEIGHTMAP_KERNELS_X86
