// NEON table ("neon", AArch64; this file is built for ARMv8.2-A + fp16 + dotprod, so dispatch.cc
// only chooses it where the CPU reports both). The same tile code as the x86 files with 4-lane
// vectors: Q8_0 dots with sdot (s8 × s8 -> int32, exact), f16 widened with fcvtl, f32 fma.
// Activation quantization is the scalar reference.
#include "kernels/tables.h"

#if WEIGHTMAP_KERNELS_ARM64

#include <arm_neon.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/prefetch.h"

namespace weightmap {
namespace kernels {
namespace {

struct F {
  using V = float32x4_t;
  static constexpr int W = 4;
  static constexpr int kTransNB = 4, kTransMB = 3;
  static constexpr int kOuterMB = 4, kOuterNV = 4;
  static V zero() { return vdupq_n_f32(0.0f); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V ld(const float* p) { return vld1q_f32(p); }
  static V ld(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
  static V ld_part(const float* p, int n) {
    float tmp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::memcpy(tmp, p, sizeof(float) * size_t(n));
    return vld1q_f32(tmp);
  }
  static V ld_part(const uint16_t* p, int n) {
    uint16_t tmp[4] = {0, 0, 0, 0};
    std::memcpy(tmp, p, sizeof(uint16_t) * size_t(n));
    return ld(tmp);
  }
  static void st(float* p, V v) { vst1q_f32(p, v); }
  static void st_part(float* p, V v, int n) {
    float tmp[4];
    vst1q_f32(tmp, v);
    std::memcpy(p, tmp, sizeof(float) * size_t(n));
  }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static float reduce(V v) { return vaddvq_f32(v); }
};

#include "kernels/tiles/gemm_tiles.h"
#include "kernels/tiles/attention_tiles.h"
#include "kernels/tiles/packed_gemm_tiles.h"
#include "kernels/tiles/q8_tiles.h"

struct QNeon {
  static constexpr int kBytes = 16;
  static constexpr bool kBias = false;
  using D = int8x16_t;
  using A = int32x4_t;
  using FV = float32x4_t;
  using WP = int8x16_t;
  static D ld(const void* p) { return vld1q_s8(static_cast<const int8_t*>(p)); }
  static A acc_zero() { return vdupq_n_s32(0); }
  static A acc_lane0(int32_t v) { return vsetq_lane_s32(v, vdupq_n_s32(0), 0); }
  static A acc_ld(const int32_t* p) { return vld1q_s32(p); }
  static void acc_st(int32_t* p, A a) { vst1q_s32(p, a); }
  static D bcast4(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
  }
  static WP prep_raw(D w) { return w; }
  static WP prep_relaid(D w) { return w; }
  static A dot(A acc, const WP& w, D x) { return vdotq_s32(acc, w, x); }
  static FV cvt(A a) { return vcvtq_f32_s32(a); }
  static FV fzero() { return vdupq_n_f32(0.0f); }
  static FV fset1(float x) { return vdupq_n_f32(x); }
  static FV fld(const float* p) { return vld1q_f32(p); }
  static void fst(float* p, FV v) { vst1q_f32(p, v); }
  static FV fmul(FV a, FV b) { return vmulq_f32(a, b); }
  static FV ffma(FV a, FV b, FV c) { return vfmaq_f32(c, a, b); }
  static float freduce(FV v) { return vaddvq_f32(v); }
  static void relayout(const int8_t* src, const Q8Layout& l, int group, uint32_t flip, uint8_t* dst) {
    Q8Relayout<4>(src, l, group, flip, dst);
  }
};

#include "kernels/tiles/i8_tiles.h"

// matvec_q8 for the groups that are not multiples of 16.
void MatvecQ8Other(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t cols,
                   int group, int64_t r0, int64_t r1) {
  if (group % 4 == 0) return Q8Matmul<QNeon, 1, 1>(wq, ws, xq, xs, y, 1, cols, 0, group, r0, r1);
  scalar::matvec_q8(wq, ws, xq, xs, y, cols, group, r0, r1);
}

// matvec_q8_rows, and matvec_q8 as its m = 1 (8 activation rows per tile).
void MatvecQ8Rows(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t m,
                  int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  if (group % 16 == 0) return Q8MatvecRows<QNeon, false, 8>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
  Q8MatvecEachRow<MatvecQ8Other>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
}

// The split form of MatvecQ8Rows (the same choice of tile for the three).
int64_t Q8RowsPrepBytesN(int64_t m, int64_t cols, int group) {
  if (group % 16 == 0) return Q8RowsPrepBytes<QNeon, false, 8>(m, cols, group);
  return scalar::q8_rows_prep_bytes(m, cols, group);
}

void Q8RowsPrepareN(const int8_t* xq, const float* xs, int64_t m, int64_t cols, int group, uint8_t* prep) {
  if (group % 16 == 0) return Q8RowsPrepare<QNeon, false, 8>(xq, xs, m, cols, group, prep);
  scalar::q8_rows_prepare(xq, xs, m, cols, group, prep);
}

void MatvecQ8PreparedN(const int8_t* wq, const float* ws, const uint8_t* prep, float* y, int64_t m, int64_t cols,
                       int64_t ldy, int group, int64_t r0, int64_t r1) {
  if (group % 16 == 0) return Q8MatvecPrepared<QNeon, false, 8>(wq, ws, prep, y, m, cols, ldy, group, r0, r1);
  Q8PreparedEachRow<MatvecQ8Other>(wq, ws, prep, y, m, cols, ldy, group, r0, r1);
}

void MatvecQ8(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t cols,
              int group, int64_t r0, int64_t r1) {
  MatvecQ8Rows(wq, ws, xq, xs, y, 1, cols, 0, group, r0, r1);
}

void MatmulQ8(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t m,
              int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  if (group % 4 != 0) return scalar::matmul_q8(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
  Q8Matmul<QNeon, 4, 3>(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1);
}

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
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, F::ld(x + i));
  for (; i < n; ++i) y[i] = scalar::f16_to_f32_one(x[i]);
}

void F32ToF16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
  for (; i < n; ++i) y[i] = scalar::f32_to_f16_one(x[i]);
}

void Bf16ToF32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(x + i), 16)));
  if (i < n) scalar::bf16_to_f32(x + i, y + i, n - i);
}

float Dot(const float* a, const float* b, int64_t n) { return DotF32(a, b, n); }
void Axpy(float alpha, const float* x, float* y, int64_t n) { AxpyF32(alpha, x, y, n); }

#include "kernels/tiles/q8_kv_pieces.h"

}  // namespace

const KernelTable& NeonTable() {
  static const KernelTable table = [] {
    KernelTable t{};
    t.isa = "neon";
    t.quantize_q8 = scalar::quantize_q8;
    t.matvec_q8 = MatvecQ8;
    t.matmul_q8 = MatmulQ8;
    t.matvec_q8_rows = MatvecQ8Rows;
    t.q8_rows_prep_bytes = Q8RowsPrepBytesN;
    t.q8_rows_prepare = Q8RowsPrepareN;
    t.matvec_q8_prepared = MatvecQ8PreparedN;
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
    t.quantize_i8 = scalar::quantize_i8;
    t.gemm_i8 = GemmI8<QNeon, 4, 1>;
    t.sgemm_packed = SgemmPacked<6, 1>;
    t.attention = AttentionHead;
    t.i8_zero = 0;
    t.ggml = NeonGgml();
    return t;
  }();
  return table;
}

}  // namespace kernels
}  // namespace weightmap

#endif  // WEIGHTMAP_KERNELS_ARM64
