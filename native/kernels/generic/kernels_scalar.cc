// The scalar reference of every table kernel: plain loops in the order the contract states, so
// that each SIMD variant can be checked against it. Also the table used on CPUs without a
// vector variant.
#include <cmath>
#include <cstring>

#include "kernels/kernels.h"
#include "kernels/tables.h"

namespace weightmap {
namespace kernels {
namespace scalar {

// Round half away from zero, clamped to the int8 range Q8_0 uses; NaN becomes 0.
static int8_t QuantizeOne(float v) {
  if (!(v == v)) return 0;
  float r = std::round(v);
  if (r > 127.0f) r = 127.0f;
  if (r < -127.0f) r = -127.0f;
  return static_cast<int8_t>(r);
}

void quantize_q8(const float* x, int64_t n, int group, int8_t* q, float* s) {
  for (int64_t g = 0; g * group < n; ++g) {
    const float* xg = x + g * group;
    float amax = 0.0f;
    for (int i = 0; i < group; ++i) amax = std::fmax(amax, std::fabs(xg[i]));
    const float scale = amax / 127.0f;
    s[g] = scale;
    for (int i = 0; i < group; ++i) q[g * group + i] = scale == 0.0f ? 0 : QuantizeOne(xg[i] / scale);
  }
}

// One row: Σ_g (w_s·x_s)·(Σ_{i in g} w_q·x_q), the int32 sum exact inside each group.
static float DotQ8(const int8_t* w, const float* ws, const int8_t* x, const float* xs, int64_t cols,
                   int group) {
  float sum = 0.0f;
  for (int64_t g = 0; g * group < cols; ++g) {
    int32_t isum = 0;
    for (int i = 0; i < group; ++i) isum += int32_t(w[g * group + i]) * int32_t(x[g * group + i]);
    sum += (ws[g] * xs[g]) * static_cast<float>(isum);
  }
  return sum;
}

void matvec_q8(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y,
               int64_t cols, int group, int64_t r0, int64_t r1) {
  const int64_t groups = cols / group;
  for (int64_t r = r0; r < r1; ++r) y[r] = DotQ8(wq + r * cols, ws + r * groups, xq, xs, cols, group);
}

void matmul_q8(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y,
               int64_t m, int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  const int64_t groups = cols / group;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = r0; r < r1; ++r)
      y[i * ldy + r] = DotQ8(wq + r * cols, ws + r * groups, xq + i * cols, xs + i * groups, cols, group);
}

void matvec_q8_rows(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y,
                    int64_t m, int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  for (int64_t i = 0; i < m; ++i)
    matvec_q8(wq, ws, xq + i * cols, xs + i * (cols / group), y + i * ldy, cols, group, r0, r1);
}

int64_t q8_rows_prep_bytes(int64_t m, int64_t cols, int group) {
  return Q8CopyScalesOffset(m, cols) + m * (cols / group) * int64_t(sizeof(float));
}

void q8_rows_prepare(const int8_t* xq, const float* xs, int64_t m, int64_t cols, int group, uint8_t* prep) {
  std::memcpy(prep, xq, size_t(m * cols));
  std::memcpy(prep + Q8CopyScalesOffset(m, cols), xs, size_t(m * (cols / group)) * sizeof(float));
}

void matvec_q8_prepared(const int8_t* wq, const float* ws, const uint8_t* prep, float* y, int64_t m, int64_t cols,
                        int64_t ldy, int group, int64_t r0, int64_t r1) {
  const float* xs = reinterpret_cast<const float*>(prep + Q8CopyScalesOffset(m, cols));
  matvec_q8_rows(wq, ws, reinterpret_cast<const int8_t*>(prep), xs, y, m, cols, ldy, group, r0, r1);
}

float f16_to_f32_one(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    // Inf, or NaN with its payload kept and the quiet bit set (as F16C and AArch64 FCVT do).
    bits = sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u);
  } else if (exp == 0) {
    // Zero or subnormal: mant · 2^-24, exact in f32.
    float v = std::ldexp(static_cast<float>(mant), -24);
    std::memcpy(&bits, &v, 4);
    bits |= sign;
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16_one(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((a >> 13) & 0x3ffu);  // quiet NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds (to even) past 65504: Inf
  if (a < 0x38800000u) {
    // Below 2^-14: a multiple of 2^-24 after rounding. |f|·2^24 is exact; rint rounds to even.
    float v;
    std::memcpy(&v, &a, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(v * 16777216.0f));
  }
  uint32_t h = ((((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3ffu));
  const uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return sign | static_cast<uint16_t>(h);
}

void hgemm(const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0,
           int64_t n1) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n0; j < n1; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * f16_to_f32_one(b[p * n + j]);
      c[i * n + j] = sum;
    }
}

void hgemm_trans(const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n,
                 int64_t n0, int64_t n1) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n0; j < n1; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * f16_to_f32_one(b[j * k + p]);
      c[i * n + j] = sum;
    }
}

void sgemm(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0,
           int64_t n1) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n0; j < n1; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
      c[i * n + j] = sum;
    }
}

void sgemm_trans(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0,
                 int64_t n1) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n0; j < n1; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[j * k + p];
      c[i * n + j] = sum;
    }
}

void q8_gemm(const float* a, const int8_t* bq, const float* bs, int64_t group, float* c, int64_t m, int64_t k,
             int64_t n, int64_t n0, int64_t n1) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n0; j < n1; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * (float(bq[p * n + j]) * bs[(p * n + j) / group]);
      c[i * n + j] = sum;
    }
}

void q8_gemm_trans(const float* a, const int8_t* bq, const float* bs, int64_t group, float* c, int64_t m, int64_t k,
                   int64_t n, int64_t n0, int64_t n1) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n0; j < n1; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * (float(bq[j * k + p]) * bs[(j * k + p) / group]);
      c[i * n + j] = sum;
    }
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f16_to_f32_one(x[i]);
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16_one(x[i]);
}

void bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = uint32_t(x[i]) << 16;
    std::memcpy(&y[i], &bits, 4);
  }
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void quantize_i8(const float* x, int64_t m, int64_t k, uint8_t* q, int64_t ldq, float* s) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * k;
    float amax = 0.0f;
    for (int64_t c = 0; c < k; ++c) amax = std::fmax(amax, std::fabs(xi[c]));
    s[i] = amax / 127.0f;
    const float inv = 127.0f / amax;
    uint8_t* qi = q + i * ldq;
    for (int64_t c = 0; c < k; ++c) qi[c] = uint8_t(amax == 0.0f ? 0 : QuantizeOne(xi[c] * inv));
    for (int64_t c = k; c < ldq; ++c) qi[c] = 0;
  }
}

void gemm_i8(const uint8_t* xq, const float* xs, int64_t m, int64_t ldx, const I8Weights& w, const float* bias,
             float* y, int64_t ldy, int64_t p0, int64_t p1) {
  const int64_t j1 = p1 * kI8Panel < w.n ? p1 * kI8Panel : w.n;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = p0 * kI8Panel; j < j1; ++j) {
      const int8_t* panel = w.data + (j / kI8Panel) * w.k4 * kI8Panel;
      const int64_t c = j % kI8Panel;
      int32_t acc = 0;
      for (int64_t d = 0; d < w.k; ++d)
        acc += int32_t(int8_t(xq[i * ldx + d])) * panel[(d / 4) * kI8Panel * 4 + c * 4 + d % 4];
      y[i * ldy + j] = std::fma(static_cast<float>(acc), xs[i] * w.scale[j], bias ? bias[j] : 0.0f);
    }
}

void sgemm_packed(const float* x, int64_t m, const F32Panels& w, const float* bias, float* y, int64_t ldy,
                  int64_t p0, int64_t p1) {
  const int64_t j1 = p1 * kF32Panel < w.n ? p1 * kF32Panel : w.n;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = p0 * kF32Panel; j < j1; ++j) {
      const float* panel = w.data + (j / kF32Panel) * w.k * kF32Panel + j % kF32Panel;
      float s = 0.0f;
      for (int64_t p = 0; p < w.k; ++p) s += x[i * w.k + p] * panel[p * kF32Panel];
      y[i * ldy + j] = bias ? s + bias[j] : s;
    }
}

void attention(const float* q, const float* k, const float* v, float* out, int64_t T, int64_t hd, int64_t ld,
               float scale, float* scratch) {
  float* p = scratch;  // [T] one row of scores, then probabilities
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < T; ++j) {
      float s = 0;
      for (int64_t d = 0; d < hd; ++d) s += q[t * ld + d] * k[j * ld + d];
      p[j] = s * scale;
    }
    softmax(p, T);
    for (int64_t d = 0; d < hd; ++d) {
      float o = 0;
      for (int64_t j = 0; j < T; ++j) o += p[j] * v[j * ld + d];
      out[t * ld + d] = o;
    }
  }
}

}  // namespace scalar

const KernelTable& ScalarTable() {
  static const KernelTable table = [] {
    KernelTable t{};
    t.isa = "scalar";
    t.quantize_q8 = scalar::quantize_q8;
    t.matvec_q8 = scalar::matvec_q8;
    t.matmul_q8 = scalar::matmul_q8;
    t.matvec_q8_rows = scalar::matvec_q8_rows;
    t.q8_rows_prep_bytes = scalar::q8_rows_prep_bytes;
    t.q8_rows_prepare = scalar::q8_rows_prepare;
    t.matvec_q8_prepared = scalar::matvec_q8_prepared;
    t.hgemm = scalar::hgemm;
    t.hgemm_trans = scalar::hgemm_trans;
    t.sgemm = scalar::sgemm;
    t.sgemm_trans = scalar::sgemm_trans;
    t.q8_gemm = scalar::q8_gemm;
    t.q8_gemm_trans = scalar::q8_gemm_trans;
    t.f16_to_f32 = scalar::f16_to_f32;
    t.f32_to_f16 = scalar::f32_to_f16;
    t.bf16_to_f32 = scalar::bf16_to_f32;
    t.dot_f32 = scalar::dot_f32;
    t.axpy_f32 = scalar::axpy_f32;
    t.quantize_i8 = scalar::quantize_i8;
    t.gemm_i8 = scalar::gemm_i8;
    t.sgemm_packed = scalar::sgemm_packed;
    t.attention = scalar::attention;
    t.i8_zero = 0;
    t.ggml = scalar::ggml();
    return t;
  }();
  return table;
}

}  // namespace kernels
}  // namespace weightmap
