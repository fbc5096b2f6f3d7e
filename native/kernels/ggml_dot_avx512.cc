// The ggml dot products for AVX-512 with VNNI ("avx512vnni"; built with the avx512 flags): the
// unpacked levels are u8 (q + offset) and vpdpbusd multiplies them with the s8 activations, each
// lane starting at -offset·Σx (exact for every level). 32 values per ymm (AVX512-VL): on Zen 4 a
// zmm op costs two ymm ops, and the 32-value chunks match the blocks. Byte masks (AVX512-BW) turn
// the 5th bits and Q3_K's high bits into levels.
#include "kernels/tables.h"

#if WEIGHTMAP_KERNELS_X86

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/ggml_blocks.h"

namespace weightmap {
namespace kernels {
namespace {

#include "kernels/ggml_ymm_tiles.h"

struct GgmlVnni : GgmlYmm {
  static constexpr int kRows = 8;  // 32 ymm registers (AVX512-VL)
  static constexpr bool corr(int off) { return off != 0; }
  template <int off>
  static A dot(A acc, C u, C x) {
#if defined(__GNUC__) && !defined(__clang__)
    // the tied operand: GCC 12 otherwise copies the accumulator around each vpdpbusd (kernels_avx512.cc)
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "vm"(x));
    return acc;
#else
    return _mm256_dpbusd_epi32(acc, u, x);
#endif
  }
  static C expand(uint32_t bits, uint8_t val) { return _mm256_maskz_mov_epi8(__mmask32(bits), _mm256_set1_epi8(char(val))); }
  static C test(C v, uint8_t bit, uint8_t val) {
    return _mm256_maskz_mov_epi8(_mm256_test_epi8_mask(v, _mm256_set1_epi8(char(bit))), _mm256_set1_epi8(char(val)));
  }
};

#include "kernels/ggml_tiles.h"
#include "kernels/ggml_gemm_tiles.h"

void QuantizeAct(const float* x, int64_t n, int8_t* q, float* d, int16_t* sum) {
  Avx512VnniTable().quantize_q8(x, n, kActBlock, q, d);
  GgmlActSums(q, n, sum);
}

}  // namespace

const GgmlKernels& Avx512VnniGgml() {
  static const GgmlKernels kernels = [] {
    GgmlKernels k = GgmlTable<GgmlVnni>(QuantizeAct);
    GgmlGemmInstall<GgmlVnni>(k);  // m >= kGgmlGemmMinRows
    return k;
  }();
  return kernels;
}

}  // namespace kernels
}  // namespace weightmap

#endif  // WEIGHTMAP_KERNELS_X86
