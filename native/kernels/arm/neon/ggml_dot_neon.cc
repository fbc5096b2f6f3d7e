// The ggml dot products for NEON ("neon": ARMv8.2-A with dotprod and fp16): the unpacked levels
// minus their offset are s8 (|q| <= 128 fits: u - off wraps to the right byte), multiplied with
// the s8 activations by sdot (exact int32), so no lane starts at a correction. A 32-value chunk is
// two q registers; f32 lanes 0..3 and 4..7 likewise.
#include "kernels/tables.h"

#if WEIGHTMAP_KERNELS_ARM64

#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/ggml_blocks.h"
#include "kernels/prefetch.h"

namespace weightmap {
namespace kernels {
namespace {

struct GgmlNeon {
  static constexpr int kRows = 4;
  struct C {
    uint8x16_t lo, hi;  // values 0..15, 16..31
  };
  struct A {
    int32x4_t lo, hi;
  };
  struct FV {
    float32x4_t lo, hi;
  };
  static C load(const uint8_t* p) { return {vld1q_u8(p), vld1q_u8(p + 16)}; }
  static void store(uint8_t* p, C v) {
    vst1q_u8(p, v.lo);
    vst1q_u8(p + 16, v.hi);
  }
  static C czero() { return {vdupq_n_u8(0), vdupq_n_u8(0)}; }
  static C lo4(C v) { return {vandq_u8(v.lo, vdupq_n_u8(15)), vandq_u8(v.hi, vdupq_n_u8(15))}; }
  static C hi4(C v) { return {vshrq_n_u8(v.lo, 4), vshrq_n_u8(v.hi, 4)}; }
  static C nib(const uint8_t* p) {
    const uint8x16_t v = vld1q_u8(p);
    return {vandq_u8(v, vdupq_n_u8(15)), vshrq_n_u8(v, 4)};
  }
  static uint8x16_t And(uint8x16_t v, uint8_t m) { return vandq_u8(v, vdupq_n_u8(m)); }
  template <int k>
  static uint8x16_t Bits2(uint8x16_t v) {
    if constexpr (k == 0) return And(v, 3);
    else return And(vshrq_n_u8(v, 2 * k), 3);
  }
  template <int k>
  static C bits2(C v) {
    return {Bits2<k>(v.lo), Bits2<k>(v.hi)};
  }
  template <int k>
  static uint8x16_t Bits2_54(uint8x16_t v) {
    if constexpr (k < 2) return And(vshlq_n_u8(v, 4 - 2 * k), 0x30);
    else if constexpr (k == 2) return And(v, 0x30);
    else return And(vshrq_n_u8(v, 2), 0x30);
  }
  template <int k>
  static C bits2_54(C v) {
    return {Bits2_54<k>(v.lo), Bits2_54<k>(v.hi)};
  }
  static C test(C v, uint8_t bit, uint8_t val) {
    const uint8x16_t b = vdupq_n_u8(bit);
    return {And(vtstq_u8(v.lo, b), val), And(vtstq_u8(v.hi, b), val)};
  }
  static C expand(uint32_t bits, uint8_t val) {
    static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t bit = vld1q_u8(kBit);
    const uint8x16_t lo = vcombine_u8(vdup_n_u8(uint8_t(bits)), vdup_n_u8(uint8_t(bits >> 8)));
    const uint8x16_t hi = vcombine_u8(vdup_n_u8(uint8_t(bits >> 16)), vdup_n_u8(uint8_t(bits >> 24)));
    return {And(vtstq_u8(lo, bit), val), And(vtstq_u8(hi, bit), val)};
  }
  static C or_(C a, C b) { return {vorrq_u8(a.lo, b.lo), vorrq_u8(a.hi, b.hi)}; }
  static C xor80(C v) { return {veorq_u8(v.lo, vdupq_n_u8(0x80)), veorq_u8(v.hi, vdupq_n_u8(0x80))}; }
  static C lut(C idx, const uint8_t* table) {
    const uint8x16_t t = vld1q_u8(table);
    return {vqtbl1q_u8(t, idx.lo), vqtbl1q_u8(t, idx.hi)};
  }
  static constexpr bool corr(int) { return false; }
  template <int off>
  static A dot(A acc, C u, C x) {
    const uint8x16_t off8 = vdupq_n_u8(uint8_t(off));
    const int8x16_t qlo = vreinterpretq_s8_u8(vsubq_u8(u.lo, off8)), qhi = vreinterpretq_s8_u8(vsubq_u8(u.hi, off8));
    return {vdotq_s32(acc.lo, qlo, vreinterpretq_s8_u8(x.lo)), vdotq_s32(acc.hi, qhi, vreinterpretq_s8_u8(x.hi))};
  }
  static void Transpose4(uint8x16_t& a, uint8x16_t& b, uint8x16_t& c, uint8x16_t& d) {
    const uint32x4_t t0 = vtrn1q_u32(vreinterpretq_u32_u8(a), vreinterpretq_u32_u8(b));  // a0 b0 a2 b2
    const uint32x4_t t1 = vtrn2q_u32(vreinterpretq_u32_u8(a), vreinterpretq_u32_u8(b));  // a1 b1 a3 b3
    const uint32x4_t t2 = vtrn1q_u32(vreinterpretq_u32_u8(c), vreinterpretq_u32_u8(d));
    const uint32x4_t t3 = vtrn2q_u32(vreinterpretq_u32_u8(c), vreinterpretq_u32_u8(d));
    a = vreinterpretq_u8_u64(vtrn1q_u64(vreinterpretq_u64_u32(t0), vreinterpretq_u64_u32(t2)));
    b = vreinterpretq_u8_u64(vtrn1q_u64(vreinterpretq_u64_u32(t1), vreinterpretq_u64_u32(t3)));
    c = vreinterpretq_u8_u64(vtrn2q_u64(vreinterpretq_u64_u32(t0), vreinterpretq_u64_u32(t2)));
    d = vreinterpretq_u8_u64(vtrn2q_u64(vreinterpretq_u64_u32(t1), vreinterpretq_u64_u32(t3)));
  }
  static void transpose4(C* v) {
    Transpose4(v[0].lo, v[1].lo, v[2].lo, v[3].lo);
    Transpose4(v[0].hi, v[1].hi, v[2].hi, v[3].hi);
  }
  static A join8(A a, A b) { return {vaddq_s32(a.lo, a.hi), vaddq_s32(b.lo, b.hi)}; }
  static void join16(A a, A b, A* lo, A* hi) {
    *lo = {vzip1q_s32(a.lo, a.hi), vzip2q_s32(a.lo, a.hi)};
    *hi = {vzip1q_s32(b.lo, b.hi), vzip2q_s32(b.lo, b.hi)};
  }
  static A aadd(A a, A b) { return {vaddq_s32(a.lo, b.lo), vaddq_s32(a.hi, b.hi)}; }
  static A azero() { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }
  static A ald(const int32_t* p) { return {vld1q_s32(p), vld1q_s32(p + 4)}; }
  static FV cvt(A a) { return {vcvtq_f32_s32(a.lo), vcvtq_f32_s32(a.hi)}; }
  static FV fld(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }
  static FV fset1(float v) { return {vdupq_n_f32(v), vdupq_n_f32(v)}; }
  static FV fmul(FV a, FV b) { return {vmulq_f32(a.lo, b.lo), vmulq_f32(a.hi, b.hi)}; }
  static FV fadd(FV a, FV b) { return {vaddq_f32(a.lo, b.lo), vaddq_f32(a.hi, b.hi)}; }
  static FV ffma(FV a, FV b, FV c) { return {vfmaq_f32(c.lo, a.lo, b.lo), vfmaq_f32(c.hi, a.hi, b.hi)}; }
  static float reduce(FV v) { return vaddvq_f32(vaddq_f32(v.lo, v.hi)); }
  static FV f16x8(uint64_t lo, uint64_t hi) {
    return {vcvt_f32_f16(vreinterpret_f16_u64(vcreate_u64(lo))), vcvt_f32_f16(vreinterpret_f16_u64(vcreate_u64(hi)))};
  }
  static float f16(uint16_t h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }
  static FV cvt_u8(uint64_t v) {
    const uint16x8_t w = vmovl_u8(vcreate_u8(v));
    return {vcvtq_f32_u32(vmovl_u16(vget_low_u16(w))), vcvtq_f32_u32(vmovl_high_u16(w))};
  }
  static FV e8m0x8(uint64_t v) {
    // bits (e - 1) << 23, or 0x00200000 << e where e < 2 (E8m0Half)
    const uint16x8_t w = vmovl_u8(vcreate_u8(v));
    return {E8m0x4(vmovl_u16(vget_low_u16(w))), E8m0x4(vmovl_high_u16(w))};
  }
  static float32x4_t E8m0x4(uint32x4_t e) {
    const uint32x4_t normal = vshlq_n_u32(vsubq_u32(e, vdupq_n_u32(1)), 23);
    const uint32x4_t sub = vshlq_u32(vdupq_n_u32(0x00200000), vreinterpretq_s32_u32(e));
    return vreinterpretq_f32_u32(vbslq_u32(vcltq_u32(e, vdupq_n_u32(2)), sub, normal));
  }
  static FV cvt_s8(uint64_t v) {
    const int16x8_t w = vmovl_s8(vcreate_s8(v));
    return {vcvtq_f32_s32(vmovl_s16(vget_low_s16(w))), vcvtq_f32_s32(vmovl_high_s16(w))};
  }
};

#include "kernels/tiles/ggml_tiles.h"

void QuantizeAct(const float* x, int64_t n, int8_t* q, float* d, int16_t* sum) {
  NeonTable().quantize_q8(x, n, kActBlock, q, d);
  GgmlActSums(q, n, sum);
}

}  // namespace

const GgmlKernels& NeonGgml() {
  static const GgmlKernels kernels = GgmlTable<GgmlNeon>(QuantizeAct);
  return kernels;
}

}  // namespace kernels
}  // namespace weightmap

#endif  // WEIGHTMAP_KERNELS_ARM64
