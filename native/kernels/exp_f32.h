// e^x in f32 without a library call, for the loops that need it (softmax and the activations in
// kernels_common.cc, the sampler's weights in sampling/sampler.cc): branch-free so that those loops
// vectorize (std::exp does not without -ffast-math).
//
// Max relative error 1.72·2^-24 over every float in [-86.6, 88.7] (checked exhaustively against
// double exp; test/kernels/exp.test.ts); e^x < 2.4e-38 (x < -86.6) flushes to 0; x > 88.72 gives
// +inf and NaN stays NaN, as expf. Always inlined, so it is compiled with its caller's flags.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace weightmap {
namespace kernels {

constexpr uint32_t kExpLoBits = 0xC2AD3333u;  // kLo = -86.6f: e^-86.6 = 2.4e-38, the normal range ends
constexpr uint32_t kExpHiBits = 0x42B17218u;  // kHi = 88.72283935546875f: e^kHi is the largest float

// 2^n · e^r with n = round(xc / ln 2) and r = x - n·ln 2: e^x for x = xc in [kLo, kHi]. (ExpF32
// passes a NaN x with xc = kLo, so that it stays NaN.)
[[gnu::always_inline]] inline float ExpReduced(float xc, float x) {
  // n by the 1.5·2^23 trick (round to nearest even in the default mode): kr = n + 1.5·2^23 holds
  // n in its low mantissa bits
  constexpr float kShift = 12582912.0f;
  constexpr uint32_t kShiftBits = 0x4B400000u;
  const float kr = xc * 1.44269502162933349609375f + kShift;
  const float n = kr - kShift;
  // r in two steps (Cody–Waite: the high part of ln 2 has 9 bits, so n·hi is exact)
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  // e^r on |r| <= 0.347: Taylor to degree 7 (truncation < 6e-9 relative)
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^(n-1) from its bits, times 2p: n - 1 + 127 stays in [1, 254] for n in [-125, 128]
  uint32_t kr_bits;
  std::memcpy(&kr_bits, &kr, sizeof kr_bits);
  const uint32_t bits = (kr_bits - kShiftBits + 126u) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return (p + p) * scale;
}

// e^x for every float. Its range tests are float compares, which GCC if-converts (so that loops
// over it vectorize) only under -fno-trapping-math, as kernels_common.cc is built; the sampler's
// vocabulary loops test the bits instead (sampling/sampler.cc).
[[gnu::always_inline]] inline float ExpF32(float x) {
  constexpr float kLo = -86.6f;               // kExpLoBits
  constexpr float kHi = 88.72283935546875f;   // kExpHiBits
  // clamped for n (a NaN becomes kLo here, and stays NaN through r)
  float xc = x > kLo ? x : kLo;
  xc = xc < kHi ? xc : kHi;
  float y = ExpReduced(xc, x);
  y = x < kLo ? 0.0f : y;
  y = x > kHi ? HUGE_VALF : y;
  return y;
}

}  // namespace kernels
}  // namespace weightmap
