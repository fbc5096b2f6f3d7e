// AVX-512 tables (F + BW + DQ + VL; this file is built with those flags plus VNNI, FMA, F16C):
//  * "avx512vnni": Q8_0 dots with vpdpbusd (u8 × s8 -> int32). The weights become u8 as w ^ 0x80
//    = w + 128 and each group's int32 is corrected by -128·Σx, so it is exact for every int8.
//  * "avx512": the same without VNNI (Skylake-X): |w| × (x·sign w) with vpmaddubsw, then vpmaddwd;
//    exact for xq in [-127, 127]. Only the "avx512" functions may run on a CPU without VNNI, and
//    they use no VNNI instruction (test/kernels/isa-instructions.test.ts reads the disassembly).
// f16 is widened with vcvtph2ps and narrowed with vcvtps2ph (round to nearest even).
#include "kernels/tables.h"

#if WEIGHTMAP_KERNELS_X86

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 flags the deliberately undefined vectors inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/x86/avx512/vnni_dot.h"

namespace weightmap {
namespace kernels {
namespace {

struct F {
  using V = __m512;
  static constexpr int W = 16;
  static constexpr int kTransNB = 4, kTransMB = 3;
  static constexpr int kOuterMB = 6, kOuterNV = 2;
  static __mmask16 mask(int n) { return __mmask16((1u << n) - 1u); }
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V ld(const float* p) { return _mm512_loadu_ps(p); }
  static V ld(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static V ld_part(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static V ld_part(const uint16_t* p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p)); }
  static void st(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void st_part(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static float reduce(V v) { return _mm512_reduce_add_ps(v); }
};

#include "kernels/tiles/gemm_tiles.h"
#include "kernels/tiles/attention_tiles.h"
#include "kernels/tiles/packed_gemm_tiles.h"
#include "kernels/tiles/q8_tiles.h"
#include "kernels/x86/avx512/few_rows_avx512.h"

// Q8Relayout for 16 lanes with 16×16 dword transposes: the 64-byte block c of each of the 16
// groups of a superblock becomes steps 16c..16c+15 (the last block of an odd multiple of 32 is
// 32 bytes: 8 steps). Other group sizes take the scalar loop.
void RelayoutZ(const int8_t* src, const Q8Layout& l, int group, uint32_t flip, uint8_t* dst) {
  if (group % 32 != 0) return Q8Relayout<16>(src, l, group, flip, dst);
  const __m512i fl = _mm512_set1_epi32(int(flip));
  const int blocks = (group + 63) / 64;
  for (int64_t sb = 0; sb < l.superblocks; ++sb) {
    uint8_t* out = dst + sb * l.steps * 64;
    const int64_t present = l.groups - sb * 16 < 16 ? l.groups - sb * 16 : 16;
    for (int c = 0; c < blocks; ++c) {
      const int dwords = group - 64 * c >= 64 ? 16 : 8;
      const __mmask16 mk = dwords == 16 ? __mmask16(0xffff) : __mmask16(0x00ff);
      __m512i r[16], a[16], b[16];
      for (int j = 0; j < 16; ++j)
        r[j] = j < present ? _mm512_maskz_loadu_epi32(mk, src + (sb * 16 + j) * group + 64 * c) : _mm512_setzero_si512();
      // a[2i], a[2i+1]: rows 2i, 2i+1 interleaved by dword within each 128-bit lane
      for (int i = 0; i < 8; ++i) {
        a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
      }
      // b[4i+c'] lane k: column 4k+c' of rows 4i..4i+3
      for (int i = 0; i < 4; ++i) {
        b[4 * i + 0] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]);
        b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
        b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
        b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
      }
      // column 4k+c' = lane k of b[c'], b[4+c'], b[8+c'], b[12+c']: a 4×4 transpose of 128-bit lanes
      for (int cc = 0; cc < 4; ++cc) {
        const __m512i t0 = _mm512_shuffle_i32x4(b[cc], b[4 + cc], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i t1 = _mm512_shuffle_i32x4(b[cc], b[4 + cc], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512i t2 = _mm512_shuffle_i32x4(b[8 + cc], b[12 + cc], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i t3 = _mm512_shuffle_i32x4(b[8 + cc], b[12 + cc], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512i col[4] = {_mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(3, 1, 3, 1)),
                                _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(3, 1, 3, 1))};
        for (int k = 0; k < 4; ++k) {
          const int step = 4 * k + cc;
          if (step < dwords) _mm512_storeu_si512(out + (16 * c + step) * 64, _mm512_xor_si512(col[k], fl));
        }
      }
    }
  }
}

// Float side shared by the int8 traits below.
struct FloatZ {
  using FV = __m512;
  static FV cvt(__m512i a) { return _mm512_cvtepi32_ps(a); }
  static FV fzero() { return _mm512_setzero_ps(); }
  static FV fset1(float x) { return _mm512_set1_ps(x); }
  static FV fld(const float* p) { return _mm512_loadu_ps(p); }
  static FV fmul(FV a, FV b) { return _mm512_mul_ps(a, b); }
  static FV ffma(FV a, FV b, FV c) { return _mm512_fmadd_ps(a, b, c); }
  static float freduce(FV v) { return _mm512_reduce_add_ps(v); }
  static FV fpair(const float* s) {
    const __m512 two = _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(s))));
    return _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0), two);
  }
  // lane l: s[kQuadGroup[l]] (q8_tiles.h)
  static FV fquad(const float* s) {
    return _mm512_permutexvar_ps(_mm512_set_epi32(3, 3, 1, 1, 3, 3, 1, 1, 2, 2, 0, 0, 2, 2, 0, 0),
                                 _mm512_castps128_ps512(_mm_loadu_ps(s)));
  }
  // per 128-bit lane: [a0 + a2, a1 + a3, b0 + b2, b1 + b3] (exact: int32 sums of Q8 dots)
  static __m512i combine2(__m512i a, __m512i b) {
    return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
  }
  static __m512i ld(const void* p) { return _mm512_loadu_si512(p); }
  // 32 bytes into the lower half, the upper half zero (a ymm load zeroes the rest of the zmm)
  static __m512i ld_half(const void* p) {
    return _mm512_zextsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  static __m512i acc_zero() { return _mm512_setzero_si512(); }
  static __m512i acc_lane0(int32_t v) { return _mm512_maskz_set1_epi32(1, v); }
  static __m512i acc_ld(const int32_t* p) { return _mm512_loadu_si512(p); }
  static void acc_st(int32_t* p, __m512i a) { _mm512_storeu_si512(p, a); }
  static void fst(float* p, FV v) { _mm512_storeu_ps(p, v); }
  static __m512i bcast4(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
  }
};

struct FloatY {
  using FV = __m256;
  static FV cvt(__m256i a) { return _mm256_cvtepi32_ps(a); }
  static FV fzero() { return _mm256_setzero_ps(); }
  static FV fset1(float x) { return _mm256_set1_ps(x); }
  static FV fld(const float* p) { return _mm256_loadu_ps(p); }
  static FV fmul(FV a, FV b) { return _mm256_mul_ps(a, b); }
  static FV ffma(FV a, FV b, FV c) { return _mm256_fmadd_ps(a, b, c); }
  static float freduce(FV v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static __m256i ld(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static __m256i acc_zero() { return _mm256_setzero_si256(); }
  static __m256i acc_lane0(int32_t v) { return _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, v); }
  static __m256i acc_ld(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
};

// vpdpbusd on zmm: u8 weights (w ^ 0x80) × s8 activations.
struct QVnniZ : FloatZ {
  static constexpr int kBytes = 64;
  static constexpr bool kBias = true;
  using D = __m512i;
  using A = __m512i;
  using WP = __m512i;
  static WP prep_raw(D w) { return _mm512_xor_si512(w, _mm512_set1_epi8(char(0x80))); }
  static WP prep_relaid(D w) { return w; }
  static A dot(A acc, const WP& w, D x) { return Dpbusd(acc, w, x); }
  static void relayout(const int8_t* src, const Q8Layout& l, int group, uint32_t flip, uint8_t* dst) {
    RelayoutZ(src, l, group, flip, dst);
  }
  // 128 (u8) × -x: exact, as x is in [-127, 127]
  static A bias_corr(A acc, D x) {
    return _mm512_dpbusd_epi32(acc, _mm512_set1_epi8(char(0x80)), _mm512_sub_epi8(_mm512_setzero_si512(), x));
  }
  static A dot_xw(A acc, D xu, D w) { return DpbusdReg(acc, xu, w); }
  // acc - 128·Σw per lane (vpdpbusd of 128 as u8 and w, subtracted): exact
  static A wcorr(A acc, D w) {
    return _mm512_sub_epi32(acc, _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(char(0x80)), w));
  }
};

// vpdpbusd on ymm (AVX512-VL), for groups that are odd multiples of 32.
struct QVnniY : FloatY {
  static constexpr int kBytes = 32;
  static constexpr bool kBias = true;
  using D = __m256i;
  using A = __m256i;
  using WP = __m256i;
  static WP prep_raw(D w) { return _mm256_xor_si256(w, _mm256_set1_epi8(char(0x80))); }
  static WP prep_relaid(D w) { return w; }
  static A dot(A acc, const WP& w, D x) { return Dpbusd(acc, w, x); }
  static A bias_corr(A acc, D x) {
    return _mm256_dpbusd_epi32(acc, _mm256_set1_epi8(char(0x80)), _mm256_sub_epi8(_mm256_setzero_si256(), x));
  }
  static A dot_xw(A acc, D xu, D w) { return DpbusdReg(acc, xu, w); }
  static A wcorr(A acc, D w) {
    return _mm256_sub_epi32(acc, _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(char(0x80)), w));
  }
  static void acc_st(int32_t* p, A a) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), a); }
};

// No VNNI, zmm: |w| (u8, up to 128) × (x with w's sign) (s8) with vpmaddubsw, pairs summed by vpmaddwd.
struct QBwZ : FloatZ {
  static constexpr int kBytes = 64;
  static constexpr bool kBias = false;
  using D = __m512i;
  using A = __m512i;
  struct WP {
    __m512i abs;
    __mmask64 neg;
  };
  static WP prep_raw(D w) { return WP{_mm512_abs_epi8(w), _mm512_movepi8_mask(w)}; }
  static WP prep_relaid(D w) { return prep_raw(w); }
  static A dot(A acc, const WP& w, D x) {
    const __m512i xs = _mm512_mask_sub_epi8(x, w.neg, _mm512_setzero_si512(), x);
    const __m512i pairs = _mm512_maddubs_epi16(w.abs, xs);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)));
  }
  static void relayout(const int8_t* src, const Q8Layout& l, int group, uint32_t flip, uint8_t* dst) {
    RelayoutZ(src, l, group, flip, dst);
  }
};

// No VNNI, ymm: the AVX2 form, for groups that are odd multiples of 32.
struct QBwY : FloatY {
  static constexpr int kBytes = 32;
  static constexpr bool kBias = false;
  using D = __m256i;
  using A = __m256i;
  struct WP {
    __m256i abs, w;
  };
  static WP prep_raw(D w) { return WP{_mm256_abs_epi8(w), w}; }
  static WP prep_relaid(D w) { return prep_raw(w); }
  static A dot(A acc, const WP& w, D x) {
    const __m256i pairs = _mm256_maddubs_epi16(w.abs, _mm256_sign_epi8(x, w.w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
};

#include "kernels/tiles/i8_tiles.h"

// ---------------------------------------------------------------- Q8_0
// 16 values rounded half away from zero (trunc, then one step away from zero when |fraction| >=
// 0.5), NaN to 0, clamped to [-127, 127], as int8.
__m128i RoundToInt8(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 away = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(int(0x80000000u))), _mm512_castps_si512(_mm512_set1_ps(1.0f))));
  __m512 r = _mm512_mask_add_ps(t, up, t, away);
  r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), r);
  r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(r));
}

void QuantizeQ8(const float* x, int64_t n, int group, int8_t* q, float* s) {
  if (group % 16 != 0) return scalar::quantize_q8(x, n, group, q, s);
  for (int64_t g = 0; g * group < n; ++g) {
    const float* xg = x + g * group;
    int8_t* qg = q + g * group;
    __m512 mx = _mm512_setzero_ps();
    for (int i = 0; i < group; i += 16) mx = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xg + i)), mx);  // NaN-skipping
    const float scale = _mm512_reduce_max_ps(mx) / 127.0f;
    s[g] = scale;
    if (scale == 0.0f) {
      std::memset(qg, 0, size_t(group));
      continue;
    }
    const __m512 sv = _mm512_set1_ps(scale);
    for (int i = 0; i < group; i += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qg + i), RoundToInt8(_mm512_div_ps(_mm512_loadu_ps(xg + i), sv)));
  }
}

// quantize_i8: per row, max|x| (NaN-skipping), then q = round half away (x · f32(127 / max)),
// stored as q + Zero.
template <uint8_t Zero>
void QuantizeI8(const float* x, int64_t m, int64_t k, uint8_t* q, int64_t ldq, float* s) {
  const __m128i zero = _mm_set1_epi8(char(Zero));
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * k;
    uint8_t* qi = q + i * ldq;
    __m512 mx = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 16 <= k; c += 16) mx = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xi + c)), mx);
    if (c < k) mx = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(F::mask(int(k - c)), xi + c)), mx);
    const float amax = _mm512_reduce_max_ps(mx);
    s[i] = amax / 127.0f;
    if (amax == 0.0f) {
      std::memset(qi, Zero, size_t(ldq));
      continue;
    }
    const __m512 inv = _mm512_set1_ps(127.0f / amax);
    for (c = 0; c < k; c += 16) {
      const int n = int(k - c < 16 ? k - c : 16);
      const __mmask16 mk = F::mask(n);
      const __m128i b = RoundToInt8(_mm512_mul_ps(_mm512_maskz_loadu_ps(mk, xi + c), inv));
      _mm_mask_storeu_epi8(qi + c, mk, _mm_add_epi8(b, zero));
    }
    if (k < ldq) std::memset(qi + k, Zero, size_t(ldq - k));
  }
}

// matvec_q8 for the groups that are not multiples of 32.
template <class QZ>
void MatvecQ8Other(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t cols,
                   int group, int64_t r0, int64_t r1) {
  if (group % 4 == 0) return Q8Matmul<QZ, 1, 1>(wq, ws, xq, xs, y, 1, cols, 0, group, r0, r1);
  scalar::matvec_q8(wq, ws, xq, xs, y, cols, group, r0, r1);
}

// matvec_q8_rows, and matvec_q8 as its m = 1. 8 activation rows per tile: 16 accumulators of the
// 32 registers. Group 32 in zmm: two groups per vector (an odd count's last group in a half-zero
// zmm); multiples of 64: zmm; odd multiples of 32 (group 96, ...): ymm. The choice depends on cols
// and group only, never on m.
template <class QZ, class QY>
void MatvecQ8RowsT(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t m,
                   int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  if (group == 32) return Q8MatvecRows<QZ, true, 8>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
  if (group % 64 == 0) return Q8MatvecRows<QZ, false, 8>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
  if (group % 32 == 0) return Q8MatvecRows<QY, false, 8>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
  Q8MatvecEachRow<MatvecQ8Other<QZ>>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
}

// The split form of MatvecQ8RowsT (the same choice of tile for the three).
enum class RowsShape { kPairs, kZmm, kYmm, kEachRow };
RowsShape RowsShapeOf(int64_t cols, int group) {
  if (group == 32) return RowsShape::kPairs;
  if (group % 64 == 0) return RowsShape::kZmm;
  if (group % 32 == 0) return RowsShape::kYmm;
  return RowsShape::kEachRow;
}

template <class QZ, class QY>
int64_t Q8RowsPrepBytesT(int64_t m, int64_t cols, int group) {
  switch (RowsShapeOf(cols, group)) {
    case RowsShape::kPairs: return Q8RowsPrepBytes<QZ, true, 8>(m, cols, group);
    case RowsShape::kZmm: return Q8RowsPrepBytes<QZ, false, 8>(m, cols, group);
    case RowsShape::kYmm: return Q8RowsPrepBytes<QY, false, 8>(m, cols, group);
    default: return scalar::q8_rows_prep_bytes(m, cols, group);
  }
}

template <class QZ, class QY>
void Q8RowsPrepareT(const int8_t* xq, const float* xs, int64_t m, int64_t cols, int group, uint8_t* prep) {
  switch (RowsShapeOf(cols, group)) {
    case RowsShape::kPairs: return Q8RowsPrepare<QZ, true, 8>(xq, xs, m, cols, group, prep);
    case RowsShape::kZmm: return Q8RowsPrepare<QZ, false, 8>(xq, xs, m, cols, group, prep);
    case RowsShape::kYmm: return Q8RowsPrepare<QY, false, 8>(xq, xs, m, cols, group, prep);
    default: return scalar::q8_rows_prepare(xq, xs, m, cols, group, prep);
  }
}

template <class QZ, class QY>
void MatvecQ8PreparedT(const int8_t* wq, const float* ws, const uint8_t* prep, float* y, int64_t m, int64_t cols,
                       int64_t ldy, int group, int64_t r0, int64_t r1) {
  switch (RowsShapeOf(cols, group)) {
    case RowsShape::kPairs: return Q8MatvecPrepared<QZ, true, 8>(wq, ws, prep, y, m, cols, ldy, group, r0, r1);
    case RowsShape::kZmm: return Q8MatvecPrepared<QZ, false, 8>(wq, ws, prep, y, m, cols, ldy, group, r0, r1);
    case RowsShape::kYmm: return Q8MatvecPrepared<QY, false, 8>(wq, ws, prep, y, m, cols, ldy, group, r0, r1);
    default: return Q8PreparedEachRow<MatvecQ8Other<QZ>>(wq, ws, prep, y, m, cols, ldy, group, r0, r1);
  }
}

template <class QZ, class QY>
void MatvecQ8T(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t cols,
               int group, int64_t r0, int64_t r1) {
  MatvecQ8RowsT<QZ, QY>(wq, ws, xq, xs, y, 1, cols, 0, group, r0, r1);
}

// R×M register tile: 4×4 with VNNI (16 accumulators, 8 loads per 16 vpdpbusd); 4×3 without (the
// sign trick needs more registers per weight row).
template <class QZ, int R, int M>
void MatmulQ8T(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t m,
               int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  if (group % 4 != 0) return scalar::matmul_q8(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
  Q8Matmul<QZ, R, M>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
}

// ---------------------------------------------------------------- f16 / f32
void Hgemm(const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  if (OuterRowsAny<uint16_t>(a, b, c, m, k, n, n0, n1)) return;
  Gemm<uint16_t>(a, b, c, m, k, n, n0, n1);
}
void HgemmTrans(const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0,
                int64_t n1) {
  if (TransRowsTakes(m)) return TransRowsAny<uint16_t>(a, b, c, m, k, n, n0, n1);
  GemmTrans<uint16_t>(a, b, c, m, k, n, n0, n1);
}
void Sgemm(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  if (OuterRowsAny<float>(a, b, c, m, k, n, n0, n1)) return;
  Gemm<float>(a, b, c, m, k, n, n0, n1);
}
void SgemmTrans(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0,
                int64_t n1) {
  if (TransRowsTakes(m)) return TransRowsAny<float>(a, b, c, m, k, n, n0, n1);
  GemmTrans<float>(a, b, c, m, k, n, n0, n1);
}

void F16ToF32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, F::ld(x + i));
  if (i < n) F::st_part(y + i, F::ld_part(x + i, int(n - i)), int(n - i));
}

void F32ToF16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (i < n) {
    const __mmask16 mk = F::mask(int(n - i));
    _mm256_mask_storeu_epi16(y + i, mk,
                             _mm512_cvtps_ph(_mm512_maskz_loadu_ps(mk, x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

void Bf16ToF32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    _mm512_storeu_si512(y + i, _mm512_slli_epi32(w, 16));
  }
  if (i < n) {
    const __mmask16 mk = F::mask(int(n - i));
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, x + i));
    _mm512_mask_storeu_ps(y + i, mk, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
}

float Dot(const float* a, const float* b, int64_t n) { return DotF32(a, b, n); }
void Axpy(float alpha, const float* x, float* y, int64_t n) { AxpyF32(alpha, x, y, n); }

#include "kernels/tiles/q8_kv_pieces.h"

// A decode step's attention against a q8_0 cache (at most 4 query rows, the cache's group of 32):
// widened in registers by the f32 kernels' own loops, so bit for bit widen_q8 followed by SgemmTrans
// or Sgemm; other shapes through widened pieces.
void Q8GemmTrans(const float* a, const int8_t* bq, const float* bs, int64_t group, float* c, int64_t m, int64_t k,
                 int64_t n, int64_t n0, int64_t n1) {
  if (group != 32 || m > 4 || (k != 64 && k != 128)) return Q8GemmTransPieces(a, bq, bs, group, c, m, k, n, n0, n1);
  const Q8Values rows{bq, bs, k};
  for (int64_t y = 0; y < m; y += 2) {  // two rows of A in registers at a time: a third and fourth read B from L2
    const float* ay = a + y * k;
    float* cy = c + y * n;
    if (m - y == 1)
      k == 128 ? TransRowsFixed<Q8Values, 1, 8>(ay, rows, cy, n, n0, n1) : TransRowsFixed<Q8Values, 1, 4>(ay, rows, cy, n, n0, n1);
    else
      k == 128 ? TransRowsFixed<Q8Values, 2, 8>(ay, rows, cy, n, n0, n1) : TransRowsFixed<Q8Values, 2, 4>(ay, rows, cy, n, n0, n1);
  }
}

void Q8Gemm(const float* a, const int8_t* bq, const float* bs, int64_t group, float* c, int64_t m, int64_t k, int64_t n,
            int64_t n0, int64_t n1) {
  if (group != 32 || m > 4 || n0 % 16 != 0) return Q8GemmPieces(a, bq, bs, group, c, m, k, n, n0, n1);
  OuterRowsOf(a, Q8Values{bq, bs, n}, c, m, k, n, n0, n1);
}

// The table slots both AVX-512 tables share.
KernelTable Avx512Common() {
  KernelTable t{};
  t.quantize_q8 = QuantizeQ8;
  t.hgemm = Hgemm;
  t.hgemm_trans = HgemmTrans;
  t.sgemm = Sgemm;
  t.sgemm_trans = SgemmTrans;
  t.q8_gemm = Q8Gemm;
  t.q8_gemm_trans = Q8GemmTrans;
  t.f16_to_f32 = F16ToF32;
  t.f32_to_f16 = F32ToF16;
  t.bf16_to_f32 = Bf16ToF32;
  t.dot_f32 = Dot;
  t.axpy_f32 = Axpy;
  t.sgemm_packed = SgemmPacked<6, 4>;  // 24 zmm accumulators of vfmadd231ps
  t.attention = AttentionHead;
  return t;
}

}  // namespace

// The sign trick: |w| and a sign mask per weight vector.
const KernelTable& Avx512Table() {
  static const KernelTable table = [] {
    KernelTable t = Avx512Common();
    t.isa = "avx512";
    t.matvec_q8 = MatvecQ8T<QBwZ, QBwY>;
    t.matmul_q8 = MatmulQ8T<QBwZ, 4, 3>;
    t.matvec_q8_rows = MatvecQ8RowsT<QBwZ, QBwY>;
    t.q8_rows_prep_bytes = Q8RowsPrepBytesT<QBwZ, QBwY>;
    t.q8_rows_prepare = Q8RowsPrepareT<QBwZ, QBwY>;
    t.matvec_q8_prepared = MatvecQ8PreparedT<QBwZ, QBwY>;
    t.quantize_i8 = QuantizeI8<0>;
    t.gemm_i8 = GemmI8<QBwZ, 6, 3>;
    t.i8_zero = 0;
    t.ggml = Avx2Ggml();  // vpmaddubsw as in AVX2 (no VNNI)
    return t;
  }();
  return table;
}

const KernelTable& Avx512VnniTable() {
  static const KernelTable table = [] {
    KernelTable t = Avx512Common();
    t.isa = "avx512vnni";
    t.matvec_q8 = MatvecQ8T<QVnniZ, QVnniY>;
    t.matmul_q8 = MatmulQ8T<QVnniZ, 4, 4>;
    t.matvec_q8_rows = MatvecQ8RowsT<QVnniZ, QVnniY>;
    t.q8_rows_prep_bytes = Q8RowsPrepBytesT<QVnniZ, QVnniY>;
    t.q8_rows_prepare = Q8RowsPrepareT<QVnniZ, QVnniY>;
    t.matvec_q8_prepared = MatvecQ8PreparedT<QVnniZ, QVnniY>;
    t.quantize_i8 = QuantizeI8<128>;     // u8 activations for vpdpbusd
    t.gemm_i8 = GemmI8<QVnniZ, 6, 4>;    // 24 zmm accumulators: 4 weight loads and 6 broadcasts per 24 vpdpbusd
    t.i8_zero = 128;
    t.ggml = Avx512VnniGgml();
    return t;
  }();
  return table;
}

}  // namespace kernels
}  // namespace weightmap

#endif  // WEIGHTMAP_KERNELS_X86
