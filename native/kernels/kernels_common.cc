// Row kernels (memory-bound, one implementation for every CPU) and per-thread scratch memory.
// Sums that decide a result's scale (rmsnorm, layernorm, softmax) are accumulated in double.
#include <cmath>
#include <new>

#include "kernels/kernels.h"
#include "kernels/tables.h"

namespace weightmap {
namespace kernels {

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / double(n) + double(eps)));
  for (int64_t i = 0; i < n; ++i) y[i] = w[i] * (x[i] * inv);
}

void layernorm(const float* x, const float* g, const float* b, float* y, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / double(n);
  double var = 0.0;
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  const float inv = static_cast<float>(1.0 / std::sqrt(var / double(n) + double(eps)));
  const float meanf = static_cast<float>(mean);
  for (int64_t i = 0; i < n; ++i) {
    const float v = (x[i] - meanf) * inv * g[i];
    y[i] = b ? v + b[i] : v;
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void silu_mul(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    y[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void gelu_tanh(float* x, int64_t n) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  }
}

void gelu_erf(float* x, int64_t n) {
  const float inv_sqrt2 = 0.7071067811865476f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::erf(v * inv_sqrt2));
  }
}

void rope_cos_sin(int64_t rot_dim, int64_t pos, float theta, float* cos_out, float* sin_out) {
  // As the Hugging Face reference computes it: inverse frequencies and angles in f32, then the
  // cosine and sine of that f32 angle (here in double, rounded once).
  const int64_t half = rot_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float inv_freq = 1.0f / std::pow(theta, float(2 * i) / float(rot_dim));
    const float angle = float(pos) * inv_freq;
    cos_out[i] = static_cast<float>(std::cos(double(angle)));
    sin_out[i] = static_cast<float>(std::sin(double(angle)));
  }
}

void rope_apply(float* x, int64_t rot_dim, const float* cos_v, const float* sin_v, bool interleaved) {
  const int64_t half = rot_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    float* pa = interleaved ? &x[2 * i] : &x[i];
    float* pb = interleaved ? &x[2 * i + 1] : &x[i + half];
    const float a = *pa, b = *pb;
    *pa = a * cos_v[i] - b * sin_v[i];
    *pb = a * sin_v[i] + b * cos_v[i];
  }
}

void rope(float* x, int64_t rot_dim, int64_t pos, float theta, bool interleaved) {
  const int64_t half = rot_dim / 2;
  float* cs = static_cast<float*>(Scratch(kScratchD, sizeof(float) * size_t(2 * half + 1)));
  rope_cos_sin(rot_dim, pos, theta, cs, cs + half);
  rope_apply(x, rot_dim, cs, cs + half, interleaved);
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
