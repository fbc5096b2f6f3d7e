#include "convert/quantize_q8.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/tables.h"

namespace weightmap {
namespace convert {

namespace {

// Elements decoded to f32 at a time (then quantized group by group).
constexpr int64_t kBlock = 8192;

// The loops below work on the bit patterns where they choose between values, so that compilers
// vectorize them (they will not turn floating-point comparisons into selects) and nothing differs
// from plain scalar float32 arithmetic. For floats that are not NaN, |x| ordered as an integer
// (its bits without the sign) is |x| ordered as a float.
constexpr uint32_t kAbsMask = 0x7fffffffu;
constexpr uint32_t kInfBits = 0x7f800000u;

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void ToFloat(const uint8_t* src, WeightType type, int64_t n, float* out, uint16_t* half) {
  switch (type) {
    case WeightType::F32:
      std::memcpy(out, src, size_t(n) * 4);
      return;
    case WeightType::F16:
      std::memcpy(half, src, size_t(n) * 2);
      kernels::Active().f16_to_f32(half, out, n);
      return;
    case WeightType::BF16: {
      std::memcpy(half, src, size_t(n) * 2);
      for (int64_t i = 0; i < n; ++i) out[i] = FromBits(uint32_t(half[i]) << 16);
      return;
    }
  }
}

// max |x[i]| over a group; NaN elements are skipped.
float MaxAbs(const float* x, int group) {
  int32_t amax = 0;
  for (int i = 0; i < group; ++i) {
    int32_t a = static_cast<int32_t>(Bits(x[i]) & kAbsMask);
    a = a > static_cast<int32_t>(kInfBits) ? 0 : a;
    amax = a > amax ? a : amax;
  }
  return FromBits(static_cast<uint32_t>(amax));
}

// One group: s = max|x| / 127, q = round-half-even(x / s) in [-127, 127], NaN -> 0. Exact division
// (no reciprocal). |x / s| <= 191 for any finite x and s > 0 (s may be subnormal), so v + 1.5·2^23
// rounds v to an integer (ties to even) held in the low mantissa bits: round(v) = bits - kRoundBits.
void QuantizeGroup(const float* x, int group, int8_t* q, float* scale) {
  const float s = MaxAbs(x, group) / 127.0f;
  *scale = s;
  if (s == 0.0f) {
    std::memset(q, 0, size_t(group));
    return;
  }
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  constexpr int32_t kRoundBits = 0x4b400000;
  for (int i = 0; i < group; ++i) {
    const uint32_t t = Bits(x[i] / s);
    const uint32_t keep = 0u - static_cast<uint32_t>((t & kAbsMask) <= kInfBits);  // NaN (Inf / Inf) -> 0
    const float v = FromBits(t & keep);
    int32_t r = static_cast<int32_t>(Bits(v + kRound)) - kRoundBits;
    r = r > 127 ? 127 : r;
    r = r < -127 ? -127 : r;
    q[i] = static_cast<int8_t>(r);
  }
}

// One ggml Q8_0 block (see quantize_q8.h) of 32 floats into 34 bytes.
void QuantizeGgmlBlock(const float* x, uint8_t* out) {
  const float d = MaxAbs(x, kGgmlQ8Block) / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t h = kernels::scalar::f32_to_f16_one(d);
  out[0] = uint8_t(h & 0xff);
  out[1] = uint8_t(h >> 8);
  for (int i = 0; i < kGgmlQ8Block; ++i) {
    const float v = std::round(x[i] * id);  // |v| <= 127 for finite x; NaN (NaN x, or Inf · 0) -> 0
    out[2 + i] = uint8_t(int8_t(v == v ? (v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v) : 0.0f));
  }
}

// Calls group_fn(values, at) for each group of `group` elements of `src`, decoded to float32
// (`at`: the index of the group's first element), decoding kBlock-sized runs of whole groups at once.
template <class GroupFn>
void ForEachFloatGroup(const uint8_t* src, WeightType type, int64_t n, int group, GroupFn group_fn) {
  const int64_t block = group >= kBlock ? group : (kBlock / group) * group;
  std::vector<float> values(static_cast<size_t>(block));
  std::vector<uint16_t> half(type == WeightType::F32 ? 0 : static_cast<size_t>(block));
  const int bytes = WeightTypeBytes(type);
  for (int64_t at = 0; at < n; at += block) {
    const int64_t count = n - at < block ? n - at : block;
    ToFloat(src + at * bytes, type, count, values.data(), half.data());
    for (int64_t g = 0; g < count; g += group) group_fn(values.data() + g, at + g);
  }
}

}  // namespace

int WeightTypeBytes(WeightType type) { return type == WeightType::F32 ? 4 : 2; }

void QuantizeQ8Weights(const uint8_t* src, WeightType type, int64_t n, int group, int8_t* q, float* scales) {
  ForEachFloatGroup(src, type, n, group, [&](const float* x, int64_t at) { QuantizeGroup(x, group, q + at, scales + at / group); });
}

void QuantizeGgmlQ8_0(const uint8_t* src, WeightType type, int64_t n, uint8_t* out) {
  ForEachFloatGroup(src, type, n, kGgmlQ8Block,
                    [&](const float* x, int64_t at) { QuantizeGgmlBlock(x, out + at / kGgmlQ8Block * kGgmlQ8BlockBytes); });
}

void QuantizeGgmlQ8_0FromQ8(const uint8_t* q, const uint8_t* scales, int64_t group, int64_t first, int64_t n, uint8_t* out) {
  float values[kGgmlQ8Block];
  for (int64_t b = 0; b < n; b += kGgmlQ8Block) {
    for (int i = 0; i < kGgmlQ8Block; ++i) {
      float s;
      std::memcpy(&s, scales + (first + b + i) / group * 4, 4);
      values[i] = float(int8_t(q[b + i])) * s;
    }
    QuantizeGgmlBlock(values, out + b / kGgmlQ8Block * kGgmlQ8BlockBytes);
  }
}

}  // namespace convert
}  // namespace weightmap
