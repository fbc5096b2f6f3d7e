// Row kernels (one implementation for every CPU) and per-thread scratch memory. Sums that decide
// a result's scale (rmsnorm, layernorm, softmax) are accumulated in double, in 16 independent
// lanes (LaneSum) so that they vectorize without reassociation: every build and CPU gets the
// same bits. The hot ones are also cloned for AVX-512 (WEIGHTMAP_AVX512_CLONE: the dynamic
// linker picks the clone at load).
#include <cmath>
#include <cstring>
#include <new>

#include "kernels/exp_f32.h"
#include "kernels/kernels.h"
#include "kernels/tables.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WEIGHTMAP_AVX512_CLONE __attribute__((target_clones("avx512f", "default")))
#else
#define WEIGHTMAP_AVX512_CLONE
#endif

namespace weightmap {
namespace kernels {

namespace {

constexpr int kLanes = 16;

// Σ term(i) for i in [0, n): lane j sums the terms i ≡ j (mod 16) in order, then the lanes are
// added pairwise (8 + 8, 4 + 4, ...). A fixed order the compiler can keep in vector registers.
template <class Term>
[[gnu::always_inline]] inline double LaneSum(int64_t n, Term term) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += term(i + j);
  for (int j = 0; i + j < n; ++j) acc[j] += term(i + j);
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

// max x[i] in 16 lanes (NaNs skipped unless x[0] is one, as the sequential scan would).
[[gnu::always_inline]] inline float LaneMax(const float* x, int64_t n) {
  float acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = x[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  for (int j = 0; i + j < n; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  float mx = acc[0];
  for (int j = 1; j < kLanes; ++j) mx = acc[j] > mx ? acc[j] : mx;
  return mx;
}

// erf(z) without a library call, branch-free so that gelu_erf vectorizes (std::erf does not):
// Abramowitz & Stegun 7.1.26, erf(|z|) = 1 - t·P(t)·e^(-z²) with t = 1 / (1 + 0.3275911|z|),
// |error| <= 1.5e-7 in exact arithmetic; in f32 the test against a float64 erf bounds it at 2.5e-7.
// Large |z| gives ±1 (e^(-z²) flushes to 0); NaN stays NaN.
[[gnu::always_inline]] inline float ErfF32(float z) {
  const float a = std::fabs(z);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float y = 1.0f - p * t * ExpF32(-a * a);
  return std::copysign(y, z);
}

}  // namespace

WEIGHTMAP_AVX512_CLONE
void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  const double ss = LaneSum(n, [&](int64_t i) { return double(x[i]) * double(x[i]); });
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / double(n) + double(eps)));
  for (int64_t i = 0; i < n; ++i) y[i] = w[i] * (x[i] * inv);
}

WEIGHTMAP_AVX512_CLONE
void layernorm(const float* x, const float* g, const float* b, float* y, int64_t n, float eps) {
  const double mean = LaneSum(n, [&](int64_t i) { return double(x[i]); }) / double(n);
  const double var = LaneSum(n, [&](int64_t i) { return (x[i] - mean) * (x[i] - mean); });
  const float inv = static_cast<float>(1.0 / std::sqrt(var / double(n) + double(eps)));
  const float meanf = static_cast<float>(mean);
  for (int64_t i = 0; i < n; ++i) {
    const float v = (x[i] - meanf) * inv * g[i];
    y[i] = b ? v + b[i] : v;
  }
}

WEIGHTMAP_AVX512_CLONE
float max_f32(const float* x, int64_t n) { return LaneMax(x, n); }

WEIGHTMAP_AVX512_CLONE
double exp_sum(float* x, int64_t n, float scale, float shift) {
  for (int64_t i = 0; i < n; ++i) x[i] = ExpF32(x[i] * scale - shift);
  return LaneSum(n, [&](int64_t i) { return double(x[i]); });
}

WEIGHTMAP_AVX512_CLONE
void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const float inv = static_cast<float>(1.0 / exp_sum(x, n, 1.0f, max_f32(x, n)));
  for (int64_t k = 0; k < n; ++k) x[k] *= inv;
}

WEIGHTMAP_AVX512_CLONE
void silu_mul(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    y[i] = g / (1.0f + ExpF32(-g)) * up[i];
  }
}

WEIGHTMAP_AVX512_CLONE
void widen_q8(const int8_t* q, const float* scales, int64_t n, int64_t group, float* y) {
  for (int64_t g = 0; g < n / group; ++g) {
    const float s = scales[g];
    for (int64_t i = g * group; i < (g + 1) * group; ++i) y[i] = float(q[i]) * s;
  }
}

// 0.5·v·(1 + tanh(z)) = v / (1 + e^(-2z)): one ExpF32 and no cancellation near z = 0, branch-free
// so that it vectorizes (std::tanh is a library call per element; it was a quarter of a vision
// encode). Very negative v gives e^(-2z) = inf and -0; NaN stays NaN.
WEIGHTMAP_AVX512_CLONE
void gelu_tanh(float* x, int64_t n) {
  const float k2 = -2.0f * 0.7978845608028654f;  // -2·sqrt(2/pi)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = v / (1.0f + ExpF32(k2 * (v + 0.044715f * v * v * v)));
  }
}

// Compute-bound (a polynomial per element): 16 lanes instead of the baseline's 4 pay off.
WEIGHTMAP_AVX512_CLONE
void gelu_erf(float* x, int64_t n) {
  const float inv_sqrt2 = 0.7071067811865476f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + ErfF32(v * inv_sqrt2));
  }
}

namespace {

struct ScratchBuffers {
  void* ptr[kScratchSlots] = {};
  size_t size[kScratchSlots] = {};
  ~ScratchBuffers() {
    for (void* p : ptr)
      if (p) ::operator delete(p, std::align_val_t(64));
  }
};

thread_local ScratchBuffers scratch_buffers;

}  // namespace

void* Scratch(ScratchSlot slot, size_t bytes) {
  ScratchBuffers& s = scratch_buffers;
  if (bytes == 0) bytes = 64;
  if (s.size[slot] < bytes) {
    if (s.ptr[slot]) ::operator delete(s.ptr[slot], std::align_val_t(64));
    s.ptr[slot] = nullptr;
    s.size[slot] = 0;
    const size_t rounded = (bytes + bytes / 4 + 63) & ~size_t(63);  // grow with headroom
    s.ptr[slot] = ::operator new(rounded, std::align_val_t(64));
    s.size[slot] = rounded;
  }
  return s.ptr[slot];
}

}  // namespace kernels
}  // namespace weightmap
