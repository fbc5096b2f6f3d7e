// AVX-512 VNNI variants of the ggml kernels (KernelTable::ggml, contract in kernels.h), every
// block type. Only Avx512VnniTable() refers to them (this file is built with VNNI).
//
// A weight row is taken 256 values at a time (one K-quant super-block, or eight 32-value
// blocks), unpacked once into unsigned levels u = q + c (64 per zmm, in value order) and, per
// sub-block of 16 or 32 values, the f32 factors S and O = M - c·S; then, for every activation row,
// vpdpbusd (u8 levels × s8 activations) sums 4 products per int32 lane, within one sub-block, so
// each lane is exact; it is scaled by S·x.d, and O·x.d·X (X = the sub-block's activation sum from
// x.sum) adds the minimum and takes the shift back.
#include "kernels/tables.h"

#if WEIGHTMAP_KERNELS_X86

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 flags the deliberately undefined vectors inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/ggml_blocks.h"
#include "kernels/kernels.h"

namespace weightmap {
namespace kernels {
namespace {

// 256 values of a weight row. Sub-blocks of 32: lanes 0..7 of S and O (the rest 0); of 16: all.
struct Group {
  __m512i u[4];
  __m512 S, O;
};

template <class T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

__m512i Join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_inserti64x4(_mm512_setzero_si512(), lo, 0), hi, 1); }
__m512 Widen(__m256 v) { return _mm512_insertf32x8(_mm512_setzero_ps(), v, 0); }
__m512 Bytes16ToFloat(__m128i b) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)); }        // signed
__m256 Bytes8ToFloat(uint64_t b) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(b)))); }

// The 16 lanes j = f[first + j / group] (group 4 or 8), from registers (a store and a reload of
// the factors would stall on store forwarding in the hot loop).
__m512 Spread(__m512 f, int first, int group) {
  const __m512i by8 = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i by4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(_mm512_add_epi32(group == 8 ? by8 : by4, _mm512_set1_epi32(first)), f);
}

// Rows [r0, r1) of Y = X·Wᵀ for a type whose rows are groups of `kGroupBytes` bytes (256 values)
// unpacked by Unpack(const uint8_t*, Group*) into sub-blocks of kSub values. Tiled so that a batch
// stays in L1: kRowTile weight rows (a few KB) meet kActTile activation rows (8 KB for n = 1024)
// at a time, each weight group unpacked once per activation tile, the accumulators in registers.
// Every y[i, r] is summed over the groups in the same order whatever m and the tiling.
// y[i, r] for one weight row r and activation rows i0 .. i0 + ni - 1 (ni <= kMaxN; the
// accumulators stay in registers).
template <int kSub, int kGroupBytes, void (*Unpack)(const uint8_t*, Group*), int kMaxN>
void RowTile(const uint8_t* row, const Q8Act& x, int64_t i0, int64_t ni, float* y, int64_t ldy) {
  const int64_t groups = x.n / 256;
  const __m512i xd_pairs = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  __m512 dot[kMaxN], rest[kMaxN];
  for (int64_t t = 0; t < ni; t++) dot[t] = rest[t] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; g++) {
    Group G;
    Unpack(row + g * kGroupBytes, &G);
    for (int64_t t = 0; t < ni; t++) {
      const int64_t i = i0 + t;
      const int8_t* xq = x.q + i * x.n + 256 * g;
      const __m512 xd8 = _mm512_maskz_loadu_ps(0xFF, x.d + i * (x.n / 32) + 8 * g);
      const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sum + i * (x.n / 16) + 16 * g));
      __m512 xd, X;
      if (kSub == 32) {
        xd = xd8;
        X = Widen(_mm256_cvtepi32_ps(_mm256_madd_epi16(sums, _mm256_set1_epi16(1))));
      } else {
        xd = _mm512_permutexvar_ps(xd_pairs, xd8);
        X = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(sums));
      }
      const __m512 f = _mm512_mul_ps(G.S, xd);
      __m512 a = dot[t];
      for (int h = 0; h < 4; h++) {
        const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), G.u[h], _mm512_loadu_si512(xq + 64 * h));
        a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), kSub == 32 ? Spread(f, 2 * h, 8) : Spread(f, 4 * h, 4), a);
      }
      dot[t] = a;
      rest[t] = _mm512_fmadd_ps(_mm512_mul_ps(G.O, xd), X, rest[t]);
    }
  }
  for (int64_t t = 0; t < ni; t++) y[(i0 + t) * ldy] = _mm512_reduce_add_ps(dot[t]) + _mm512_reduce_add_ps(rest[t]);
}

// Rows [r0, r1) of Y = X·Wᵀ for a type whose rows are groups of `kGroupBytes` bytes (256 values)
// unpacked by Unpack(const uint8_t*, Group*) into sub-blocks of kSub values. Tiled so that a batch
// stays in L1: kRowTile weight rows (a few KB) meet kActTile activation rows (8 KB for n = 1024)
// at a time, each weight group unpacked once per activation tile. Every y[i, r] is summed over
// the groups in the same order whatever m and the tiling.
template <int kSub, int kGroupBytes, void (*Unpack)(const uint8_t*, Group*)>
void MatmulGroups(const uint8_t* w, const Q8Act& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  constexpr int64_t kRowTile = 16, kActTile = 8;
  const int64_t row_bytes = x.n / 256 * kGroupBytes;
  for (int64_t rt = r0; rt < r1; rt += kRowTile) {
    const int64_t rt_end = std::min(r1, rt + kRowTile);
    for (int64_t i0 = 0; i0 < x.m; i0 += kActTile) {
      const int64_t ni = std::min(kActTile, x.m - i0);
      for (int64_t r = rt; r < rt_end; r++) {
        if (ni == 1) RowTile<kSub, kGroupBytes, Unpack, 1>(w + r * row_bytes, x, i0, 1, y + r, ldy);
        else RowTile<kSub, kGroupBytes, Unpack, kActTile>(w + r * row_bytes, x, i0, ni, y + r, ldy);
      }
    }
  }
}

// ---------------------------------------------------------------- 32-value blocks, eight per group
// (No vector constants at namespace scope: their initializers would run AVX-512 code at load.)
__m128i Low4() { return _mm_set1_epi8(0x0F); }
__m256i Low4x32() { return _mm256_set1_epi8(0x0F); }

// The 32 nibbles of a block's qs[16] in value order: low nibbles, then high nibbles.
__m256i Nibbles(const uint8_t* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), Low4()), _mm_and_si128(q, Low4()));
}

// IQ4_NL's grid + 128 as u8, looked up by nibble.
__m256i GridLevels(__m256i nibbles) {
  const __m256i grid = _mm256_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141, (char)153, (char)166, (char)181,
                                        (char)197, (char)217, (char)241, 1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141,
                                        (char)153, (char)166, (char)181, (char)197, (char)217, (char)241);
  return _mm256_shuffle_epi8(grid, nibbles);
}

// Eight blocks of `Block`: levels from Levels(block bytes), S = d, O = m (with a min) or -c·d.
template <class Block, int kShift, bool kMin, __m256i (*Levels)(const uint8_t*)>
void UnpackLegacy(const uint8_t* p, Group* G) {
  __m256i lv[8];
  alignas(16) uint16_t d[8], m[8];
  for (int k = 0; k < 8; k++) {
    const uint8_t* b = p + k * sizeof(Block);
    d[k] = Load<uint16_t>(b);
    if (kMin) m[k] = Load<uint16_t>(b + 2);
    lv[k] = Levels(b);
  }
  for (int h = 0; h < 4; h++) G->u[h] = Join(lv[2 * h], lv[2 * h + 1]);
  const __m256 S = _mm256_cvtph_ps(_mm_set_epi16(d[7], d[6], d[5], d[4], d[3], d[2], d[1], d[0]));
  G->S = Widen(S);
  G->O = kMin ? Widen(_mm256_cvtph_ps(_mm_set_epi16(m[7], m[6], m[5], m[4], m[3], m[2], m[1], m[0])))
              : Widen(_mm256_mul_ps(_mm256_set1_ps(-float(kShift)), S));
}

__m256i LevelsQ4_0(const uint8_t* b) { return Nibbles(b + offsetof(BlockQ4_0, qs)); }
__m256i LevelsQ4_1(const uint8_t* b) { return Nibbles(b + offsetof(BlockQ4_1, qs)); }
__m256i FifthBits(const uint8_t* qh) { return _mm256_maskz_mov_epi8(Load<uint32_t>(qh), _mm256_set1_epi8(0x10)); }
__m256i LevelsQ5_0(const uint8_t* b) { return _mm256_or_si256(Nibbles(b + offsetof(BlockQ5_0, qs)), FifthBits(b + offsetof(BlockQ5_0, qh))); }
__m256i LevelsQ5_1(const uint8_t* b) { return _mm256_or_si256(Nibbles(b + offsetof(BlockQ5_1, qs)), FifthBits(b + offsetof(BlockQ5_1, qh))); }
__m256i LevelsQ8_0(const uint8_t* b) {
  return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + offsetof(BlockQ8_0, qs))), _mm256_set1_epi8(char(0x80)));
}
__m256i LevelsIq4Nl(const uint8_t* b) { return GridLevels(Nibbles(b + offsetof(BlockIq4Nl, qs))); }

// ---------------------------------------------------------------- super-blocks

// The 8 six-bit scales and 8 mins of a Q4_K / Q5_K block (ScaleMinK4 for every j).
void ScalesMinsK4(const uint8_t* s, __m256* scales, __m256* mins) {
  uint32_t a[3];
  std::memcpy(a, s, 12);
  const uint32_t lo6 = 0x3f3f3f3f, lo4 = 0x0f0f0f0f, lo2 = 0x03030303;
  const uint64_t sc = (a[0] & lo6) | (uint64_t((a[2] & lo4) | (((a[0] >> 6) & lo2) << 4)) << 32);
  const uint64_t mn = (a[1] & lo6) | (uint64_t(((a[2] >> 4) & lo4) | (((a[1] >> 6) & lo2) << 4)) << 32);
  *scales = Bytes8ToFloat(sc);
  *mins = Bytes8ToFloat(mn);
}

// Q4_K / Q5_K: values 64·h + l and 64·h + 32 + l are the low and high nibble of qs[32·h + l]
// (sub-blocks 2h and 2h + 1); Q5_K's 5th bit of sub-block j is bit j of qh[l].
template <class Block, bool kFive>
void UnpackQ45K(const uint8_t* p, Group* G) {
  const uint8_t* qs = p + offsetof(Block, qs);
  const __m256i one = _mm256_set1_epi8(1);
  __m256i qh;
  if (kFive) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + offsetof(BlockQ5K, qh)));
  auto fifth = [&](int j) { return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, j), one), 4); };
  for (int h = 0; h < 4; h++) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h));
    __m256i lo = _mm256_and_si256(q, Low4x32()), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), Low4x32());
    if (kFive) lo = _mm256_or_si256(lo, fifth(2 * h)), hi = _mm256_or_si256(hi, fifth(2 * h + 1));
    G->u[h] = Join(lo, hi);
  }
  __m256 sc, mn;
  ScalesMinsK4(p + offsetof(Block, scales), &sc, &mn);
  G->S = Widen(_mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(Load<uint16_t>(p + offsetof(Block, d)))), sc));
  G->O = Widen(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(Load<uint16_t>(p + offsetof(Block, dmin)))), mn)));
}

// IQ4_XS: 16 bytes of nibbles per sub-block of 32, grid + 128; S_j = d·(6-bit scale - 32).
void UnpackIq4Xs(const uint8_t* p, Group* G) {
  for (int h = 0; h < 4; h++)
    G->u[h] = Join(GridLevels(Nibbles(p + offsetof(BlockIq4Xs, qs) + 32 * h)), GridLevels(Nibbles(p + offsetof(BlockIq4Xs, qs) + 32 * h + 16)));
  const uint32_t l = Load<uint32_t>(p + offsetof(BlockIq4Xs, scales_l));
  const uint32_t h2 = Load<uint16_t>(p + offsetof(BlockIq4Xs, scales_h));
  uint64_t ls = 0;
  for (int j = 0; j < 8; j++) ls |= uint64_t(((l >> (4 * j)) & 0xF) | (((h2 >> (2 * j)) & 3) << 4)) << (8 * j);
  const __m256 S = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(Load<uint16_t>(p + offsetof(BlockIq4Xs, d)))),
                                 _mm256_sub_ps(Bytes8ToFloat(ls), _mm256_set1_ps(32.0f)));
  G->S = Widen(S);
  G->O = Widen(_mm256_mul_ps(_mm256_set1_ps(-128.0f), S));
}

// Q6_K: values 128·h + 32·k + l take 4 bits from ql[64·h + l + 32·(k & 1)] (low nibble for
// k < 2) and 2 bits from qh[32·h + l] >> 2k; u = that 6-bit number = level + 32.
void UnpackQ6K(const uint8_t* p, Group* G) {
  const uint8_t* ql = p + offsetof(BlockQ6K, ql);
  const uint8_t* qhs = p + offsetof(BlockQ6K, qh);
  const __m256i low2 = _mm256_set1_epi8(0x03);
  for (int h = 0; h < 2; h++) {
    const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * h));
    const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * h + 32));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qhs + 32 * h));
    auto high = [&](int shift) { return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, shift), low2), 4); };
    G->u[2 * h] = Join(_mm256_or_si256(_mm256_and_si256(ql0, Low4x32()), high(0)), _mm256_or_si256(_mm256_and_si256(ql1, Low4x32()), high(2)));
    G->u[2 * h + 1] = Join(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), Low4x32()), high(4)),
                           _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), Low4x32()), high(6)));
  }
  G->S = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(Load<uint16_t>(p + offsetof(BlockQ6K, d)))),
                       Bytes16ToFloat(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ6K, scales)))));
  G->O = _mm512_mul_ps(_mm512_set1_ps(-32.0f), G->S);
}

// Q2_K / Q3_K: values 128·h + 32·k + l have bits 2k..2k+1 of qs[32·h + l] as their low 2 bits;
// Q3_K adds 4 when bit 4h + k of hmask[l] is set (u = level + 4).
template <class Block, bool kThree>
void LowBits(const uint8_t* p, Group* G) {
  const uint8_t* qs = p + offsetof(Block, qs);
  const __m256i low2 = _mm256_set1_epi8(0x03), one = _mm256_set1_epi8(1);
  __m256i hm;
  if (kThree) hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + offsetof(BlockQ3K, hmask)));
  __m256i v[8];
  for (int h = 0; h < 2; h++) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h));
    for (int k = 0; k < 4; k++) {
      v[4 * h + k] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), low2);
      if (kThree) v[4 * h + k] = _mm256_or_si256(v[4 * h + k], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k), one), 2));
    }
  }
  for (int c = 0; c < 4; c++) G->u[c] = Join(v[2 * c], v[2 * c + 1]);
}

void UnpackQ2K(const uint8_t* p, Group* G) {
  LowBits<BlockQ2K, false>(p, G);
  const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ2K, scales)));
  const __m512 s = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(sc, Low4())));
  const __m512 m = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(sc, 4), Low4())));
  G->S = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(Load<uint16_t>(p + offsetof(BlockQ2K, d)))), s);
  G->O = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(Load<uint16_t>(p + offsetof(BlockQ2K, dmin)))), m));
}

// Q3_K's 16 six-bit scales (ScaleQ3K for every j) with word masks.
void UnpackQ3K(const uint8_t* p, Group* G) {
  LowBits<BlockQ3K, true>(p, G);
  uint32_t a[3];
  std::memcpy(a, p + offsetof(BlockQ3K, scales), 12);
  const uint32_t lo4 = 0x0f0f0f0f, lo2 = 0x03030303;
  const __m128i sc = _mm_set_epi32(int(((a[1] >> 4) & lo4) | (((a[2] >> 6) & lo2) << 4)), int(((a[0] >> 4) & lo4) | (((a[2] >> 4) & lo2) << 4)),
                                   int((a[1] & lo4) | (((a[2] >> 2) & lo2) << 4)), int((a[0] & lo4) | ((a[2] & lo2) << 4)));
  const __m512 s = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc)), _mm512_set1_ps(32.0f));
  G->S = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(Load<uint16_t>(p + offsetof(BlockQ3K, d)))), s);
  G->O = _mm512_mul_ps(_mm512_set1_ps(-4.0f), G->S);
}

// 32-value types need whole groups of eight blocks; other rows use the scalar reference.
template <BlockType kType, void (*Kernel)(const uint8_t*, const Q8Act&, float*, int64_t, int64_t, int64_t)>
void WholeGroups(const uint8_t* w, const Q8Act& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  if (x.n % 256 != 0) return scalar::ggml().matmul[static_cast<int>(kType)](w, x, y, ldy, r0, r1);
  Kernel(w, x, y, ldy, r0, r1);
}

template <BlockType kType, class Block, int kShift, bool kMin, __m256i (*Levels)(const uint8_t*)>
constexpr auto kLegacy = WholeGroups<kType, MatmulGroups<32, 8 * sizeof(Block), UnpackLegacy<Block, kShift, kMin, Levels>>>;

}  // namespace

const GgmlKernels& Avx512VnniGgml() {
  static const GgmlKernels kernels = [] {
    GgmlKernels k = {};
    using Fn = void (*)(const uint8_t*, const Q8Act&, float*, int64_t, int64_t, int64_t);
    auto set = [&](BlockType t, Fn fn) { k.matmul[static_cast<int>(t)] = fn; };
    set(BlockType::Q4_0, kLegacy<BlockType::Q4_0, BlockQ4_0, 8, false, LevelsQ4_0>);
    set(BlockType::Q4_1, kLegacy<BlockType::Q4_1, BlockQ4_1, 0, true, LevelsQ4_1>);
    set(BlockType::Q5_0, kLegacy<BlockType::Q5_0, BlockQ5_0, 16, false, LevelsQ5_0>);
    set(BlockType::Q5_1, kLegacy<BlockType::Q5_1, BlockQ5_1, 0, true, LevelsQ5_1>);
    set(BlockType::Q8_0, kLegacy<BlockType::Q8_0, BlockQ8_0, 128, false, LevelsQ8_0>);
    set(BlockType::IQ4_NL, kLegacy<BlockType::IQ4_NL, BlockIq4Nl, 128, false, LevelsIq4Nl>);
    set(BlockType::Q2_K, MatmulGroups<16, sizeof(BlockQ2K), UnpackQ2K>);
    set(BlockType::Q3_K, MatmulGroups<16, sizeof(BlockQ3K), UnpackQ3K>);
    set(BlockType::Q4_K, MatmulGroups<32, sizeof(BlockQ4K), UnpackQ45K<BlockQ4K, false>>);
    set(BlockType::Q5_K, MatmulGroups<32, sizeof(BlockQ5K), UnpackQ45K<BlockQ5K, true>>);
    set(BlockType::Q6_K, MatmulGroups<16, sizeof(BlockQ6K), UnpackQ6K>);
    set(BlockType::IQ4_XS, MatmulGroups<32, sizeof(BlockIq4Xs), UnpackIq4Xs>);
    return k;
  }();
  return kernels;
}

}  // namespace kernels
}  // namespace weightmap

#endif  // WEIGHTMAP_KERNELS_X86
