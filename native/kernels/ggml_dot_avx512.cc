// AVX-512 VNNI variants of the ggml kernels (KernelTable::ggml, contract in kernels.h) for the
// types of the common files: Q4_K and Q6_K (a Q4_K_M file is almost only these) and Q4_0.
// The other slots stay null and dispatch.cc gives them the scalar reference.
//
// Per weight row, each block is unpacked once into unsigned levels (64 per zmm) and then used
// against every activation row: vpdpbusd (u8 levels × s8 activations) sums 4 products per int32
// lane, which stay within one sub-block (16 or 32 values), so each lane's int32 is exact; it is
// scaled by its sub-block's S·x.d in f32 and accumulated per activation row. Signed levels are
// shifted to unsigned (Q6_K + 32, Q4_0 + 8) and the shift is taken back through the activation
// sums (- 32·S·x.d·X), like the minimums (M·x.d·X).
#include "kernels/tables.h"

#if WEIGHTMAP_KERNELS_X86

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 flags the deliberately undefined vectors inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "kernels/ggml_blocks.h"
#include "kernels/kernels.h"

namespace weightmap {
namespace kernels {
namespace {

float Half(uint16_t h) { return _cvtsh_ss(h); }

float HorizontalSum(__m512 v) { return _mm512_reduce_add_ps(v); }

__m512i Join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_inserti64x4(_mm512_setzero_si512(), lo, 0), hi, 1); }

// The 16 lanes j = lane f[first + j / group] of the factors f (group 4 or 8), from registers
// (a store and a reload of f would stall on store forwarding in the hot loop).
__m512 Spread(__m512 f, int first, int group) {
  const __m512i by8 = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i by4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(_mm512_add_epi32(group == 8 ? by8 : by4, _mm512_set1_epi32(first)), f);
}

// Per weight row: accumulators of every activation row, kept in scratch between blocks.
struct RowAccumulators {
  __m512* dot;   // [m] the S·x.d-scaled level products
  __m512* rest;  // [m] the minimum and shift terms
  int64_t m;
  __m512 one[2];  // decode (m = 1) needs no scratch
  explicit RowAccumulators(int64_t rows) : m(rows) {
    dot = rows == 1 ? &one[0] : static_cast<__m512*>(Scratch(kScratchA, sizeof(__m512) * rows));
    rest = rows == 1 ? &one[1] : static_cast<__m512*>(Scratch(kScratchB, sizeof(__m512) * rows));
    for (int64_t i = 0; i < rows; i++) dot[i] = rest[i] = _mm512_setzero_ps();
  }
  void Store(float* y, int64_t ldy, int64_t r) const {
    for (int64_t i = 0; i < m; i++) y[i * ldy + r] = HorizontalSum(dot[i]) + HorizontalSum(rest[i]);
  }
};

__m512 Widen(__m256 v) { return _mm512_insertf32x8(_mm512_setzero_ps(), v, 0); }

// The 8 six-bit scales and 8 mins of a Q4_K / Q5_K block (ScaleMinK4 for every j), as f32.
void ScalesMinsK4(const uint8_t* s, __m256* scales, __m256* mins) {
  uint32_t a[3];
  std::memcpy(a, s, 12);
  const uint32_t lo6 = 0x3f3f3f3f, lo4 = 0x0f0f0f0f, lo2 = 0x03030303;
  const uint32_t sc[2] = {a[0] & lo6, (a[2] & lo4) | (((a[0] >> 6) & lo2) << 4)};
  const uint32_t mn[2] = {a[1] & lo6, ((a[2] >> 4) & lo4) | (((a[1] >> 6) & lo2) << 4)};
  uint64_t sc8, mn8;
  std::memcpy(&sc8, sc, 8);
  std::memcpy(&mn8, mn, 8);
  *scales = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(sc8))));
  *mins = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(mn8))));
}

// Q4_K: values 64·h + l and 64·h + 32 + l are the low and high nibble of qs[32·h + l]; sub-block
// s (32 values) has S_s = d·sc_s and M_s = -(dmin·m_s).
void MatmulQ4K(const uint8_t* w, const Q8Act& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  const int64_t nb = x.n / 256;
  const int64_t row_bytes = nb * sizeof(BlockQ4K);
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  for (int64_t r = r0; r < r1; r++) {
    RowAccumulators acc(x.m);
    for (int64_t b = 0; b < nb; b++) {
      const uint8_t* blk = w + r * row_bytes + b * sizeof(BlockQ4K);
      uint16_t dh[2];
      std::memcpy(dh, blk + offsetof(BlockQ4K, d), 4);
      __m256 sc, mn;
      ScalesMinsK4(blk + offsetof(BlockQ4K, scales), &sc, &mn);
      const __m256 s_vec = _mm256_mul_ps(_mm256_set1_ps(Half(dh[0])), sc);
      const __m256 m_vec = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(_mm256_set1_ps(Half(dh[1])), mn));
      __m512i levels[4];
      for (int h = 0; h < 4; h++) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ4K, qs) + 32 * h));
        levels[h] = Join(_mm256_and_si256(q, nibble), _mm256_and_si256(_mm256_srli_epi16(q, 4), nibble));
      }
      for (int64_t i = 0; i < x.m; i++) {
        const int8_t* xq = x.q + i * x.n + b * 256;
        const __m256 xd = _mm256_loadu_ps(x.d + i * (x.n / 32) + b * 8);
        const __m512 f = Widen(_mm256_mul_ps(s_vec, xd));
        __m512 a = acc.dot[i];
        for (int h = 0; h < 4; h++) {
          const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), levels[h], _mm512_loadu_si512(xq + 64 * h));
          a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), Spread(f, 2 * h, 8), a);
        }
        acc.dot[i] = a;
        // Σ_s M_s·x.d_s·X_s, X_s = the two 16-sums of sub-block s
        const __m256i sums16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sum + i * (x.n / 16) + b * 16));
        const __m256 X = _mm256_cvtepi32_ps(_mm256_madd_epi16(sums16, _mm256_set1_epi16(1)));
        acc.rest[i] = _mm512_add_ps(acc.rest[i], Widen(_mm256_mul_ps(_mm256_mul_ps(m_vec, xd), X)));
      }
    }
    acc.Store(y, ldy, r);
  }
}

// Q6_K: values 128·h + 32·k + l (k < 4) take 4 bits from ql[64·h + l + 32·(k & 1)] (low nibble
// for k < 2) and 2 bits from qh[32·h + l] >> 2k; level + 32 is that 6-bit number. Sub-block i
// (16 values) has S_i = d·scales[i].
void MatmulQ6K(const uint8_t* w, const Q8Act& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  const int64_t nb = x.n / 256;
  const int64_t row_bytes = nb * sizeof(BlockQ6K);
  const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03);
  const __m512i xd_pairs = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  for (int64_t r = r0; r < r1; r++) {
    RowAccumulators acc(x.m);
    for (int64_t b = 0; b < nb; b++) {
      const uint8_t* blk = w + r * row_bytes + b * sizeof(BlockQ6K);
      const uint8_t* ql = blk + offsetof(BlockQ6K, ql);
      const uint8_t* qhs = blk + offsetof(BlockQ6K, qh);
      uint16_t dh;
      std::memcpy(&dh, blk + offsetof(BlockQ6K, d), 2);
      const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ6K, scales)));
      const __m512 s_vec = _mm512_mul_ps(_mm512_set1_ps(Half(dh)), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc8)));
      __m512i levels[4];
      for (int h = 0; h < 2; h++) {
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * h));
        const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qhs + 32 * h));
        auto high = [&](int shift) { return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, shift), low2), 4); };
        const __m256i v0 = _mm256_or_si256(_mm256_and_si256(ql0, low4), high(0));
        const __m256i v1 = _mm256_or_si256(_mm256_and_si256(ql1, low4), high(2));
        const __m256i v2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), high(4));
        const __m256i v3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4), high(6));
        levels[2 * h] = Join(v0, v1);
        levels[2 * h + 1] = Join(v2, v3);
      }
      for (int64_t i = 0; i < x.m; i++) {
        const int8_t* xq = x.q + i * x.n + b * 256;
        const __m512 xd = _mm512_permutexvar_ps(xd_pairs, _mm512_maskz_loadu_ps(0xFF, x.d + i * (x.n / 32) + b * 8));
        const __m512 fv = _mm512_mul_ps(s_vec, xd);
        __m512 a = acc.dot[i];
        for (int c = 0; c < 4; c++) {
          const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), levels[c], _mm512_loadu_si512(xq + 64 * c));
          a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), Spread(fv, 4 * c, 4), a);
        }
        acc.dot[i] = a;
        // the +32 shift: - 32 · Σ_i S_i·x.d_i·X_i
        const __m512 X = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sum + i * (x.n / 16) + b * 16))));
        acc.rest[i] = _mm512_fnmadd_ps(_mm512_mul_ps(fv, X), _mm512_set1_ps(32.0f), acc.rest[i]);
      }
    }
    acc.Store(y, ldy, r);
  }
}

// Q4_0, eight blocks (256 values) at a time, two per zmm: values j and j + 16 of a block are the
// low and high nibble of qs[j]; level + 8 is the nibble; S = d. Rows that are not whole groups of
// eight blocks use the scalar reference.
void MatmulQ4_0(const uint8_t* w, const Q8Act& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  const int64_t nb = x.n / 32;
  if (nb % 8 != 0) return scalar::ggml().matmul[static_cast<int>(BlockType::Q4_0)](w, x, y, ldy, r0, r1);
  const int64_t row_bytes = nb * sizeof(BlockQ4_0);
  const __m128i nibble = _mm_set1_epi8(0x0F);
  auto unpack = [&](const uint8_t* block) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ4_0, qs)));
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), nibble), _mm_and_si128(q, nibble));
  };
  for (int64_t r = r0; r < r1; r++) {
    RowAccumulators acc(x.m);
    for (int64_t b = 0; b < nb; b += 8) {
      const uint8_t* p = w + r * row_bytes + b * sizeof(BlockQ4_0);
      alignas(32) float S[8];
      __m512i levels[4];
      for (int k = 0; k < 8; k++) {
        uint16_t dh;
        std::memcpy(&dh, p + k * sizeof(BlockQ4_0), 2);
        S[k] = Half(dh);
      }
      for (int h = 0; h < 4; h++) levels[h] = Join(unpack(p + 2 * h * sizeof(BlockQ4_0)), unpack(p + (2 * h + 1) * sizeof(BlockQ4_0)));
      const __m256 s_vec = _mm256_load_ps(S);
      for (int64_t i = 0; i < x.m; i++) {
        const int8_t* xq = x.q + i * x.n + 32 * b;
        const __m256 f8 = _mm256_mul_ps(s_vec, _mm256_loadu_ps(x.d + i * nb + b));
        const __m512 f = Widen(f8);
        __m512 a = acc.dot[i];
        for (int h = 0; h < 4; h++) {
          const __m512i prod = _mm512_dpbusd_epi32(_mm512_setzero_si512(), levels[h], _mm512_loadu_si512(xq + 64 * h));
          a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(prod), Spread(f, 2 * h, 8), a);
        }
        acc.dot[i] = a;
        // the +8 shift: - 8 · Σ_k S_k·x.d_k·X_k over the eight blocks
        const __m256i sums16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sum + i * (x.n / 16) + 2 * b));
        const __m256 X = _mm256_cvtepi32_ps(_mm256_madd_epi16(sums16, _mm256_set1_epi16(1)));
        acc.rest[i] = _mm512_fnmadd_ps(Widen(_mm256_mul_ps(f8, X)), _mm512_set1_ps(8.0f), acc.rest[i]);
      }
    }
    acc.Store(y, ldy, r);
  }
}

}  // namespace

const GgmlKernels& Avx512VnniGgml() {
  static const GgmlKernels kernels = [] {
    GgmlKernels k = {};
    k.matmul[static_cast<int>(BlockType::Q4_0)] = MatmulQ4_0;
    k.matmul[static_cast<int>(BlockType::Q4_K)] = MatmulQ4K;
    k.matmul[static_cast<int>(BlockType::Q6_K)] = MatmulQ6K;
    return k;
  }();
  return kernels;
}

}  // namespace kernels
}  // namespace weightmap

#endif  // WEIGHTMAP_KERNELS_X86
