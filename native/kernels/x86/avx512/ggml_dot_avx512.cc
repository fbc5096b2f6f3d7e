// The ggml dot products for AVX-512 with VNNI ("avx512vnni"; built with the avx512 flags): the
// unpacked levels are u8 (q + offset) and vpdpbusd multiplies them with the s8 activations, each
// lane starting at -offset·Σx (exact for every level). The m > 1 tiles: 32 values per ymm
// (AVX512-VL): on Zen 4 a zmm op costs two ymm ops, and the 32-value chunks match the blocks.
// Decode (m = 1): two weight rows per zmm, each half exactly a ymm row (ggml_two.h), which full
// 512-bit units (Zen 5) run at the cost of one. Byte masks (AVX512-BW) turn the 5th bits and
// Q3_K's high bits into levels.
#include "kernels/tables.h"

#if WEIGHTMAP_KERNELS_X86

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 flags the deliberately undefined vectors inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/ggml_blocks.h"
#include "kernels/prefetch.h"
#include "kernels/x86/avx512/vnni_dot.h"

namespace weightmap {
namespace kernels {
namespace {

#include "kernels/x86/ggml_ymm_tiles.h"

struct GgmlVnni : GgmlYmm {
  static constexpr int kRows = 8;  // 32 ymm registers (AVX512-VL)
  static constexpr bool corr(int off) { return off != 0; }
  template <int off>
  static A dot(A acc, C u, C x) { return Dpbusd(acc, u, x); }
  static C expand(uint32_t bits, uint8_t val) { return _mm256_maskz_mov_epi8(__mmask32(bits), _mm256_set1_epi8(char(val))); }
  static C test(C v, uint8_t bit, uint8_t val) {
    return _mm256_maskz_mov_epi8(_mm256_test_epi8_mask(v, _mm256_set1_epi8(char(bit))), _mm256_set1_epi8(char(val)));
  }
};

#include "kernels/tiles/ggml_tiles.h"
#include "kernels/tiles/ggml_two.h"

// Decode's two rows per zmm (ggml_two.h): row r in the low 256 bits, row r + 1 in the high ones,
// each half as GgmlVnni's ymm; the activations (and their prepared factors) in both halves. With
// full 512-bit units (Zen 5) this halves the unpacking, dot and f32 instructions per row.
struct GgmlVnniTwo {
  using C = __m512i;
  using A = __m512i;
  using FV = __m512;
  // a super-block factor of each row (lanes 0, 1), converted together and spread by one permute
  struct F2 {
    __m128 v;
    friend F2 operator-(F2 x) { return {_mm_xor_ps(x.v, _mm_set1_ps(-0.0f))}; }
  };
  using U64 = GgmlTwo<uint64_t>;
  static __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static C load(GgmlTwoPtr p) { return _mm512_inserti64x4(_mm512_castsi256_si512(load32(p.p)), load32(p.p + p.step), 1); }
  static C load(const uint8_t* x) { return _mm512_broadcast_i64x4(load32(x)); }
  static C czero() { return _mm512_setzero_si512(); }
  static C lo4(C v) { return _mm512_and_si512(v, _mm512_set1_epi8(15)); }
  static C hi4(C v) { return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(15)); }
  static C nib(GgmlTwoPtr p) {
    const __m256i a = _mm256_broadcastsi128_si256(load16(p.p)), b = _mm256_broadcastsi128_si256(load16(p.p + p.step));
    return lo4(_mm512_srlv_epi64(_mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1), _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)));
  }
  template <int k>
  static C bits2(C v) {
    return _mm512_and_si512(_mm512_srli_epi16(v, 2 * k), _mm512_set1_epi8(3));
  }
  template <int k>
  static C bits2_54(C v) {
    const __m512i s = k < 2 ? _mm512_slli_epi16(v, 4 - 2 * k) : _mm512_srli_epi16(v, 2 * k - 4);
    return _mm512_and_si512(s, _mm512_set1_epi8(0x30));
  }
  static C or_(C a, C b) { return _mm512_or_si512(a, b); }
  static C xor80(C v) { return _mm512_xor_si512(v, _mm512_set1_epi8(char(0x80))); }
  static C lut(C idx, const uint8_t* table) { return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(load16(table)), idx); }
  static C expand(GgmlTwo<uint32_t> bits, uint8_t val) {
    return _mm512_maskz_mov_epi8(__mmask64(GgmlPair(bits.a, bits.b)), _mm512_set1_epi8(char(val)));
  }
  static C test(C v, uint8_t bit, uint8_t val) {
    return _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(v, _mm512_set1_epi8(char(bit))), _mm512_set1_epi8(char(val)));
  }
  static constexpr bool corr(int off) { return GgmlVnni::corr(off); }
  template <int off>
  static A dot(A acc, C u, C x) { return Dpbusd(acc, u, x); }
  static void transpose4(C* v) {
    const __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]), t1 = _mm512_unpacklo_epi32(v[2], v[3]);
    const __m512i t2 = _mm512_unpackhi_epi32(v[0], v[1]), t3 = _mm512_unpackhi_epi32(v[2], v[3]);
    v[0] = _mm512_unpacklo_epi64(t0, t1);
    v[1] = _mm512_unpackhi_epi64(t0, t1);
    v[2] = _mm512_unpacklo_epi64(t2, t3);
    v[3] = _mm512_unpackhi_epi64(t2, t3);
  }
  // per half, GgmlYmm::join8: [a.lo + a.hi | b.lo + b.hi] (128-bit lanes of that half)
  static A join8(A a, A b) {
    const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    return _mm512_add_epi32(_mm512_permutex2var_epi64(a, lo, b), _mm512_permutex2var_epi64(a, hi, b));
  }
  static void join16(A a, A b, A* lo, A* hi) {
    const __m512i order = _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
    *lo = _mm512_permutexvar_epi32(order, a);
    *hi = _mm512_permutexvar_epi32(order, b);
  }
  static A aadd(A a, A b) { return _mm512_add_epi32(a, b); }
  static A azero() { return _mm512_setzero_si512(); }
  static A ald(const int32_t* p) { return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static FV cvt(A a) { return _mm512_cvtepi32_ps(a); }
  static FV fld(const float* p) { return _mm512_broadcast_f32x8(_mm256_loadu_ps(p)); }
  static FV fset1(float v) { return _mm512_set1_ps(v); }
  static FV fset1(F2 v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), _mm512_castps128_ps512(v.v));
  }
  static FV fmul(FV a, FV b) { return _mm512_mul_ps(a, b); }
  static FV fadd(FV a, FV b) { return _mm512_add_ps(a, b); }
  static FV ffma(FV a, FV b, FV c) { return _mm512_fmadd_ps(a, b, c); }
  static void reduce2(FV v, float* y) {
    y[0] = GgmlYmm::reduce(_mm512_castps512_ps256(v));
    y[1] = GgmlYmm::reduce(_mm512_extractf32x8_ps(v, 1));
  }
  static FV f16x8(U64 lo, U64 hi) {
    return _mm512_cvtph_ps(_mm256_setr_epi64x(int64_t(lo.a), int64_t(hi.a), int64_t(lo.b), int64_t(hi.b)));
  }
  static F2 f16(GgmlTwo<uint16_t> h) { return {_mm_cvtph_ps(_mm_cvtsi32_si128(int(h.a | uint32_t(h.b) << 16)))}; }
  static FV cvt_u8(U64 v) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_set_epi64x(int64_t(v.b), int64_t(v.a)))); }
  static FV cvt_s8(U64 v) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_set_epi64x(int64_t(v.b), int64_t(v.a)))); }
  static FV e8m0x8(U64 v) {
    const __m512i e = _mm512_cvtepu8_epi32(_mm_set_epi64x(int64_t(v.b), int64_t(v.a)));
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i sub = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    return _mm512_castsi512_ps(_mm512_mask_mov_epi32(normal, _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), sub));
  }
};

#include "kernels/x86/avx512/ggml_gemm_tiles.h"

// m = 1 two rows per zmm, m >= kGgmlGemmMinRows the GEMM over unpacked panels, between them the
// ymm tiles: all three give the same bits.
template <template <class> class U>
void Matmul(const uint8_t* w, const Q8Act& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  if (x.m == 1) GgmlMatvecTwo<GgmlVnni, U<GgmlVnni>, GgmlVnniTwo, U<GgmlVnniTwo>>(w, x, y, r0, r1);
  else if (x.m >= kGgmlGemmMinRows) GgmlGemm<GgmlVnni, U<GgmlVnni>>::Matmul(w, x, y, ldy, r0, r1);
  else GgmlKernel<GgmlVnni, U<GgmlVnni>>::Matmul(w, x, y, ldy, r0, r1);
}

void QuantizeAct(const float* x, int64_t n, int8_t* q, float* d, int16_t* sum) {
  Avx512VnniTable().quantize_q8(x, n, kActBlock, q, d);
  GgmlActSums(q, n, sum);
}

}  // namespace

const GgmlKernels& Avx512VnniGgml() {
  static const GgmlKernels kernels = [] {
    GgmlKernels k = GgmlTable<GgmlVnni>(QuantizeAct);
    k.matmul[int(BlockType::Q4_0)] = Matmul<GgmlQ4_0>;
    k.matmul[int(BlockType::Q4_1)] = Matmul<GgmlQ4_1>;
    k.matmul[int(BlockType::Q5_0)] = Matmul<GgmlQ5_0>;
    k.matmul[int(BlockType::Q5_1)] = Matmul<GgmlQ5_1>;
    k.matmul[int(BlockType::Q8_0)] = Matmul<GgmlQ8_0>;
    k.matmul[int(BlockType::Q2_K)] = Matmul<GgmlQ2K>;
    k.matmul[int(BlockType::Q3_K)] = Matmul<GgmlQ3K>;
    k.matmul[int(BlockType::Q4_K)] = Matmul<GgmlQ4K>;
    k.matmul[int(BlockType::Q5_K)] = Matmul<GgmlQ5K>;
    k.matmul[int(BlockType::Q6_K)] = Matmul<GgmlQ6K>;
    k.matmul[int(BlockType::IQ4_NL)] = Matmul<GgmlIq4Nl>;
    k.matmul[int(BlockType::IQ4_XS)] = Matmul<GgmlIq4Xs>;
    k.matmul[int(BlockType::MXFP4)] = Matmul<GgmlMxfp4>;
    return k;
  }();
  return kernels;
}

}  // namespace kernels
}  // namespace weightmap

#endif  // WEIGHTMAP_KERNELS_X86
