// ggml's quantized block formats (the public layouts of llama.cpp's ggml-common.h), described as
// plain structs, and their scalar dequantization, bit-exact with ggml's dequantize_row_* (f16
// fields widened exactly to f32, then each type's formula in f32, evaluated in the order written
// below, never fused into an fma: this file is compiled with -ffp-contract=off).
//
// Every block holds a fixed number of consecutive values of a row (32, or 256 for the K-quants
// and IQ4_XS); a row of n values is n / block_values blocks laid end to end, and a tensor is its
// rows end to end. All multi-byte fields are little-endian; "f16" is IEEE binary16.
//
//   Q4_0   {f16 d; u8 qs[16]}                   x[j] = d·(lo(qs[j]) - 8), x[j+16] = d·(hi(qs[j]) - 8)
//   Q4_1   {f16 d, m; u8 qs[16]}                x[j] = d·lo(qs[j]) + m,   x[j+16] = d·hi(qs[j]) + m
//   Q5_0   {f16 d; u8 qh[4]; u8 qs[16]}         5th bit of x[j] = bit j of the u32 qh; value - 16
//   Q5_1   {f16 d, m; u8 qh[4]; u8 qs[16]}      the same bits, d·q + m
//   Q8_0   {f16 d; i8 qs[32]}                   x[j] = d·qs[j]
//   IQ4_NL {f16 d; u8 qs[16]}                   x[j] = d·kIq4nl[lo(qs[j])], x[j+16] = d·kIq4nl[hi(qs[j])]
//   Q2_K   {u8 scales[16]; u8 qs[64]; f16 d, dmin}           16 sub-blocks of 16: 4-bit scale, 4-bit min
//   Q3_K   {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}   16 sub-blocks of 16: 6-bit scale - 32
//   Q4_K   {f16 d, dmin; u8 scales[12]; u8 qs[128]}          8 sub-blocks of 32: 6-bit scale and min
//   Q5_K   {f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}
//   Q6_K   {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}     16 sub-blocks of 16: int8 scale
//   IQ4_XS {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]} 8 sub-blocks of 32: 6-bit scale - 32
//   MXFP4  {u8 e; u8 qs[16]}                    x[j] = E8m0Half(e)·kMxfp4[lo(qs[j])], x[j+16] from hi
//          (e2m1 values, doubled as integers; e the e8m0 exponent, halved to match: 2^(e - 128))
// (lo/hi: the low/high nibble.) The bit positions inside the K-quant blocks are spelled out where
// ggml_blocks.cc unpacks them (SubBlockScale* and the per-type Dequantize functions).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/kernels.h"

namespace weightmap {
namespace kernels {

#pragma pack(push, 1)
struct BlockQ4_0 { uint16_t d; uint8_t qs[16]; };
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[16]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };
struct BlockIq4Nl { uint16_t d; uint8_t qs[16]; };
struct BlockQ2K { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; };
struct BlockQ3K { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; };
struct BlockQ4K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; };
struct BlockQ5K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
struct BlockQ6K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };
struct BlockIq4Xs { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; };
struct BlockMxfp4 { uint8_t e; uint8_t qs[16]; };
#pragma pack(pop)

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24,
              "legacy block sizes");
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockIq4Nl) == 18 && sizeof(BlockMxfp4) == 17, "32-value block sizes");
static_assert(sizeof(BlockQ2K) == 84 && sizeof(BlockQ3K) == 110 && sizeof(BlockQ4K) == 144 && sizeof(BlockQ5K) == 176 &&
                  sizeof(BlockQ6K) == 210 && sizeof(BlockIq4Xs) == 136,
              "super-block sizes");

// The 16 values of IQ4_NL / IQ4_XS's non-linear 4-bit grid.
extern const int8_t kIq4nl[16];
// The 16 e2m1 values of MXFP4 times 2 (ggml's kvalues_mxfp4): sign bit 3, then 0, 0.5, ..., 6.
extern const int8_t kMxfp4[16];

// ggml's GGML_E8M0_TO_FP32_HALF: the e8m0 exponent e as 2^(e - 128), exact (e < 2: the
// subnormals 0x00200000 << e; e = 255, NaN in the OCP spec, is 2^127 as in ggml).
inline float E8m0Half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t(0x00200000) << e : uint32_t(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

struct BlockInfo {
  const char* name;     // "q4_k" (the dtype is "ggml_" + name)
  int ggml_id;          // ggml_type
  int values;           // per block
  int bytes;            // per block
};
const BlockInfo& InfoOf(BlockType type);
// The type named `name` ("q4_0", ... as in BlockInfo::name); false if none.
bool BlockTypeFromName(const char* name, BlockType* type);
// Bytes of a row of n values (n % values == 0).
inline int64_t RowBytes(BlockType type, int64_t n) { return n / InfoOf(type).values * InfoOf(type).bytes; }

// x[0, n) = the values of the first n / values blocks at `blocks` (n % values == 0). Exact.
void DequantizeBlocks(BlockType type, const uint8_t* blocks, float* x, int64_t n);

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block's 12 scale bytes.
inline void ScaleMinK4(int j, const uint8_t* s, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// The signed scale of sub-block j (0..15) of a Q3_K block: 4 low bits from a nibble of bytes
// 0..7, 2 high bits from bytes 8..11, minus 32.
inline int ScaleQ3K(int j, const uint8_t* s) {
  const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (lo | (hi << 4)) - 32;
}

// The signed scale of sub-block j (0..7) of an IQ4_XS block.
inline int ScaleIq4Xs(int j, const BlockIq4Xs& b) {
  const int lo = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF;
  const int hi = (b.scales_h >> (2 * j)) & 3;
  return (lo | (hi << 4)) - 32;
}

// One block as integer levels and per-sub-block f32 factors, so that every value is
//   x[i] = scale[i / sub] · q[i]              (has_min false)
//   x[i] = scale[i / sub] · q[i] + min[i / sub]  (has_min true; a K-quant's "- dmin·m" is + (-dmin·m))
// with scale and min computed exactly as ggml computes them (Q4_K: scale = d·sc, min = -(dmin·m)).
// q holds the signed levels (Q4_0: nibble - 8, Q3_K: -4..3, Q6_K: -32..31, IQ4: the grid values).
struct UnpackedBlock {
  int8_t q[256];
  float scale[16];
  float min[16];
  int values = 0;  // 32 or 256
  int sub = 0;     // values per sub-block: 16 or 32
  bool has_min = false;
};
void UnpackBlock(BlockType type, const uint8_t* block, UnpackedBlock* out);

}  // namespace kernels
}  // namespace weightmap
