// AVX2 table ("avx2": AVX2 + FMA + F16C, built with exactly those flags). Q8_0 dots as
// |w| (u8, up to 128) × (x with w's sign) (s8) with vpmaddubsw, pairs summed by vpmaddwd: exact
// for xq in [-127, 127] (the pair sums stay below 2·128·127 < 2^15). f16 via vcvtph2ps/vcvtps2ph.
#include "kernels/tables.h"

#if WEIGHTMAP_KERNELS_X86

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/prefetch.h"

namespace weightmap {
namespace kernels {
namespace {

// Masks for a partial vector of n < 8 floats: lanes [0, n) set.
alignas(32) const int32_t kPartMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

inline __m256i PartMask(int n) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kPartMask + 8 - n)); }

inline float Reduce8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

struct F {
  using V = __m256;
  static constexpr int W = 8;
  static constexpr int kTransNB = 4, kTransMB = 2;
  static constexpr int kOuterMB = 4, kOuterNV = 2;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V ld(const float* p) { return _mm256_loadu_ps(p); }
  static V ld(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static V ld_part(const float* p, int n) { return _mm256_maskload_ps(p, PartMask(n)); }
  static V ld_part(const uint16_t* p, int n) {
    alignas(16) uint16_t tmp[8] = {};
    std::memcpy(tmp, p, sizeof(uint16_t) * size_t(n));
    return ld(tmp);
  }
  static void st(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void st_part(float* p, V v, int n) { _mm256_maskstore_ps(p, PartMask(n), v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static float reduce(V v) { return Reduce8(v); }
};

#include "kernels/tiles/gemm_tiles.h"
#include "kernels/tiles/attention_tiles.h"
#include "kernels/tiles/packed_gemm_tiles.h"
#include "kernels/tiles/q8_tiles.h"

// Q8Relayout for 8 lanes with 8×8 dword transposes: the 32-byte block c of each of the 8 groups
// of a superblock becomes steps 8c..8c+7. Other group sizes take the scalar loop.
void RelayoutY(const int8_t* src, const Q8Layout& l, int group, uint32_t flip, uint8_t* dst) {
  if (group % 32 != 0) return Q8Relayout<8>(src, l, group, flip, dst);
  const __m256i fl = _mm256_set1_epi32(int(flip));
  const int blocks = group / 32;
  for (int64_t sb = 0; sb < l.superblocks; ++sb) {
    uint8_t* out = dst + sb * l.steps * 32;
    const int64_t present = l.groups - sb * 8 < 8 ? l.groups - sb * 8 : 8;
    for (int c = 0; c < blocks; ++c) {
      __m256i r[8], a[8], b[8];
      for (int j = 0; j < 8; ++j)
        r[j] = j < present ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + (sb * 8 + j) * group + 32 * c))
                           : _mm256_setzero_si256();
      for (int i = 0; i < 4; ++i) {
        a[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
      }
      // b[4i+c'] lane k: column 4k+c' of rows 4i..4i+3
      for (int i = 0; i < 2; ++i) {
        b[4 * i + 0] = _mm256_unpacklo_epi64(a[4 * i], a[4 * i + 2]);
        b[4 * i + 1] = _mm256_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
        b[4 * i + 2] = _mm256_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
        b[4 * i + 3] = _mm256_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
      }
      for (int cc = 0; cc < 4; ++cc) {
        const __m256i lo = _mm256_permute2x128_si256(b[cc], b[4 + cc], 0x20);  // column cc
        const __m256i hi = _mm256_permute2x128_si256(b[cc], b[4 + cc], 0x31);  // column 4 + cc
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (8 * c + cc) * 32), _mm256_xor_si256(lo, fl));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (8 * c + 4 + cc) * 32), _mm256_xor_si256(hi, fl));
      }
    }
  }
}

struct QAvx2 {
  static constexpr int kBytes = 32;
  static constexpr bool kBias = false;
  using D = __m256i;
  using A = __m256i;
  using FV = __m256;
  struct WP {
    __m256i abs, w;
  };
  static D ld(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static A acc_zero() { return _mm256_setzero_si256(); }
  static A acc_lane0(int32_t v) { return _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, v); }
  static A acc_ld(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void acc_st(int32_t* p, A a) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), a); }
  static D bcast4(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
  }
  static WP prep_raw(D w) { return WP{_mm256_abs_epi8(w), w}; }
  static WP prep_relaid(D w) { return prep_raw(w); }
  static A dot(A acc, const WP& w, D x) {
    const __m256i pairs = _mm256_maddubs_epi16(w.abs, _mm256_sign_epi8(x, w.w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  static FV cvt(A a) { return _mm256_cvtepi32_ps(a); }
  static FV fzero() { return _mm256_setzero_ps(); }
  static FV fset1(float x) { return _mm256_set1_ps(x); }
  static FV fld(const float* p) { return _mm256_loadu_ps(p); }
  static void fst(float* p, FV v) { _mm256_storeu_ps(p, v); }
  static FV fmul(FV a, FV b) { return _mm256_mul_ps(a, b); }
  static FV ffma(FV a, FV b, FV c) { return _mm256_fmadd_ps(a, b, c); }
  static float freduce(FV v) { return Reduce8(v); }
  static void relayout(const int8_t* src, const Q8Layout& l, int group, uint32_t flip, uint8_t* dst) {
    RelayoutY(src, l, group, flip, dst);
  }
};

#include "kernels/tiles/i8_tiles.h"

// ---------------------------------------------------------------- Q8_0
// (A function, not a global: a global vector would be built by AVX code at load, on any CPU.)
inline __m256 AbsMask() { return _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)); }

// 8 values rounded half away from zero (trunc, then one step away from zero when |fraction| >=
// 0.5), NaN to 0, clamped to [-127, 127], as the 8 int8 of the low half of the result.
__m128i RoundToInt8(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 up = _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(v, t), AbsMask()), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)));
  const __m256 away = _mm256_and_ps(up, _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f)));
  __m256 r = _mm256_and_ps(_mm256_add_ps(t, away), _mm256_cmp_ps(v, v, _CMP_ORD_Q));
  r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  const __m256i r32 = _mm256_cvtps_epi32(r);
  const __m128i r16 = _mm_packs_epi32(_mm256_castsi256_si128(r32), _mm256_extracti128_si256(r32, 1));
  return _mm_packs_epi16(r16, r16);
}

// max |x| over 8 lanes (NaN-skipping, as std::fmax).
float MaxAbs(__m256 mx) {
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  return _mm_cvtss_f32(m4);
}

void QuantizeQ8(const float* x, int64_t n, int group, int8_t* q, float* s) {
  if (group % 8 != 0) return scalar::quantize_q8(x, n, group, q, s);
  for (int64_t g = 0; g * group < n; ++g) {
    const float* xg = x + g * group;
    int8_t* qg = q + g * group;
    __m256 mx = _mm256_setzero_ps();
    for (int i = 0; i < group; i += 8) mx = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xg + i), AbsMask()), mx);
    const float scale = MaxAbs(mx) / 127.0f;
    s[g] = scale;
    if (scale == 0.0f) {
      std::memset(qg, 0, size_t(group));
      continue;
    }
    const __m256 sv = _mm256_set1_ps(scale);
    for (int i = 0; i < group; i += 8)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(qg + i), RoundToInt8(_mm256_div_ps(_mm256_loadu_ps(xg + i), sv)));
  }
}

// quantize_i8 (plain int8 encoding): per row, max|x|, then q = round half away (x · f32(127 /
// max)); the last k % 8 values go through a zero-padded vector.
void QuantizeI8(const float* x, int64_t m, int64_t k, uint8_t* q, int64_t ldq, float* s) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * k;
    uint8_t* qi = q + i * ldq;
    const int64_t full = k / 8 * 8;
    alignas(32) float tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::memcpy(tail, xi + full, sizeof(float) * size_t(k - full));
    __m256 mx = _mm256_and_ps(_mm256_load_ps(tail), AbsMask());
    for (int64_t c = 0; c < full; c += 8) mx = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xi + c), AbsMask()), mx);
    const float amax = MaxAbs(mx);
    s[i] = amax / 127.0f;
    if (amax == 0.0f) {
      std::memset(qi, 0, size_t(ldq));
      continue;
    }
    std::memset(qi + k, 0, size_t(ldq - k));
    const __m256 inv = _mm256_set1_ps(127.0f / amax);
    for (int64_t c = 0; c < full; c += 8)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(qi + c), RoundToInt8(_mm256_mul_ps(_mm256_loadu_ps(xi + c), inv)));
    if (full < k) {
      alignas(16) uint8_t bytes[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(bytes), RoundToInt8(_mm256_mul_ps(_mm256_load_ps(tail), inv)));
      std::memcpy(qi + full, bytes, size_t(k - full));
    }
  }
}

// matvec_q8 for the groups that are not multiples of 32.
void MatvecQ8Other(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t cols,
                   int group, int64_t r0, int64_t r1) {
  if (group % 4 == 0) return Q8Matmul<QAvx2, 1, 1>(wq, ws, xq, xs, y, 1, cols, 0, group, r0, r1);
  scalar::matvec_q8(wq, ws, xq, xs, y, cols, group, r0, r1);
}

// matvec_q8_rows, and matvec_q8 as its m = 1. 4 activation rows per tile: 8 accumulators, 4 int32
// sums and |w|, w in the 16 ymm registers.
void MatvecQ8Rows(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t m,
                  int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  if (group % 32 == 0) return Q8MatvecRows<QAvx2, false, 4>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
  Q8MatvecEachRow<MatvecQ8Other>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
}

// The split form of MatvecQ8Rows (the same choice of tile for the three).
int64_t Q8RowsPrepBytesA(int64_t m, int64_t cols, int group) {
  if (group % 32 == 0) return Q8RowsPrepBytes<QAvx2, false, 4>(m, cols, group);
  return scalar::q8_rows_prep_bytes(m, cols, group);
}

void Q8RowsPrepareA(const int8_t* xq, const float* xs, int64_t m, int64_t cols, int group, uint8_t* prep) {
  if (group % 32 == 0) return Q8RowsPrepare<QAvx2, false, 4>(xq, xs, m, cols, group, prep);
  scalar::q8_rows_prepare(xq, xs, m, cols, group, prep);
}

void MatvecQ8PreparedA(const int8_t* wq, const float* ws, const uint8_t* prep, float* y, int64_t m, int64_t cols,
                       int64_t ldy, int group, int64_t r0, int64_t r1) {
  if (group % 32 == 0) return Q8MatvecPrepared<QAvx2, false, 4>(wq, ws, prep, y, m, cols, ldy, group, r0, r1);
  Q8PreparedEachRow<MatvecQ8Other>(wq, ws, prep, y, m, cols, ldy, group, r0, r1);
}

void MatvecQ8(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t cols,
              int group, int64_t r0, int64_t r1) {
  MatvecQ8Rows(wq, ws, xq, xs, y, 1, cols, 0, group, r0, r1);
}

void MatmulQ8(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t m,
              int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  if (group % 4 != 0) return scalar::matmul_q8(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
  Q8Matmul<QAvx2, 2, 2>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
}

// ---------------------------------------------------------------- f16 / f32
void Hgemm(const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  Gemm<uint16_t>(a, b, c, m, k, n, n0, n1);
}
void HgemmTrans(const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0,
                int64_t n1) {
  GemmTrans<uint16_t>(a, b, c, m, k, n, n0, n1);
}
void Sgemm(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  Gemm<float>(a, b, c, m, k, n, n0, n1);
}
void SgemmTrans(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0,
                int64_t n1) {
  GemmTrans<float>(a, b, c, m, k, n, n0, n1);
}

void F16ToF32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F::ld(x + i));
  for (; i < n; ++i) y[i] = scalar::f16_to_f32_one(x[i]);
}

void F32ToF16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) y[i] = scalar::f32_to_f16_one(x[i]);
}

void Bf16ToF32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_slli_epi32(w, 16));
  }
  if (i < n) scalar::bf16_to_f32(x + i, y + i, n - i);
}

float Dot(const float* a, const float* b, int64_t n) { return DotF32(a, b, n); }
void Axpy(float alpha, const float* x, float* y, int64_t n) { AxpyF32(alpha, x, y, n); }

#include "kernels/tiles/q8_kv_pieces.h"

}  // namespace

const KernelTable& Avx2Table() {
  static const KernelTable table = [] {
    KernelTable t{};
    t.isa = "avx2";
    t.quantize_q8 = QuantizeQ8;
    t.matvec_q8 = MatvecQ8;
    t.matmul_q8 = MatmulQ8;
    t.matvec_q8_rows = MatvecQ8Rows;
    t.q8_rows_prep_bytes = Q8RowsPrepBytesA;
    t.q8_rows_prepare = Q8RowsPrepareA;
    t.matvec_q8_prepared = MatvecQ8PreparedA;
    t.hgemm = Hgemm;
    t.hgemm_trans = HgemmTrans;
    t.sgemm = Sgemm;
    t.sgemm_trans = SgemmTrans;
    t.q8_gemm = Q8GemmPieces;
    t.q8_gemm_trans = Q8GemmTransPieces;
    t.f16_to_f32 = F16ToF32;
    t.f32_to_f16 = F32ToF16;
    t.bf16_to_f32 = Bf16ToF32;
    t.dot_f32 = Dot;
    t.axpy_f32 = Axpy;
    t.quantize_i8 = QuantizeI8;
    t.gemm_i8 = GemmI8<QAvx2, 4, 1>;
    t.sgemm_packed = SgemmPacked<6, 1>;
    t.attention = AttentionHead;
    t.i8_zero = 0;
    t.ggml = Avx2Ggml();
    return t;
  }();
  return table;
}

}  // namespace kernels
}  // namespace weightmap

#endif  // WEIGHTMAP_KERNELS_X86
