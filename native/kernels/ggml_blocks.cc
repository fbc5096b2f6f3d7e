// Unpacking and dequantizing ggml blocks (layouts in ggml_blocks.h). Built with
// -ffp-contract=off (CMakeLists.txt): ggml rounds the product and the sum separately.
#include "kernels/ggml_blocks.h"

#include <cstring>

#include "kernels/tables.h"

namespace weightmap {
namespace kernels {

const int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
const int8_t kMxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

namespace {

const BlockInfo kInfo[static_cast<int>(BlockType::kCount)] = {
    {"q4_0", 2, 32, 18},    {"q4_1", 3, 32, 20},    {"q5_0", 6, 32, 22},   {"q5_1", 7, 32, 24},
    {"q8_0", 8, 32, 34},    {"q2_k", 10, 256, 84},  {"q3_k", 11, 256, 110}, {"q4_k", 12, 256, 144},
    {"q5_k", 13, 256, 176}, {"q6_k", 14, 256, 210}, {"iq4_nl", 20, 32, 18}, {"iq4_xs", 23, 256, 136},
    {"mxfp4", 39, 32, 17},
};

template <class Block>
Block Load(const uint8_t* p) {
  Block b;
  std::memcpy(&b, p, sizeof(Block));  // blocks are byte-aligned inside the mapping
  return b;
}

float F16(uint16_t h) { return scalar::f16_to_f32_one(h); }

// The 5th bit of value j (0..31) of a Q5_0 / Q5_1 block: bit j of the little-endian u32 qh.
int HighBit5(const uint8_t qh[4], int j) { return ((qh[j / 8] >> (j % 8)) & 1) << 4; }

// Values j and j + 16 of a 32-value block come from the low and high nibble of qs[j].
template <class Level>
void Nibbles(const uint8_t qs[16], int8_t* q, const Level& level) {
  for (int j = 0; j < 16; j++) {
    q[j] = level(qs[j] & 0xF, j);
    q[j + 16] = level(qs[j] >> 4, j + 16);
  }
}

void Single(UnpackedBlock* u, float scale) {
  u->values = u->sub = 32;
  u->scale[0] = scale;
}

void Single(UnpackedBlock* u, float scale, float min) {
  Single(u, scale);
  u->has_min = true;
  u->min[0] = min;
}

}  // namespace

const BlockInfo& InfoOf(BlockType type) { return kInfo[static_cast<int>(type)]; }

bool BlockTypeFromName(const char* name, BlockType* type) {
  for (int i = 0; i < static_cast<int>(BlockType::kCount); i++)
    if (std::strcmp(kInfo[i].name, name) == 0) {
      *type = static_cast<BlockType>(i);
      return true;
    }
  return false;
}

void UnpackBlock(BlockType type, const uint8_t* p, UnpackedBlock* u) {
  u->has_min = false;
  int8_t* q = u->q;
  switch (type) {
    case BlockType::Q4_0: {
      const auto b = Load<BlockQ4_0>(p);
      Nibbles(b.qs, q, [](int v, int) { return int8_t(v - 8); });
      Single(u, F16(b.d));
      return;
    }
    case BlockType::Q4_1: {
      const auto b = Load<BlockQ4_1>(p);
      Nibbles(b.qs, q, [](int v, int) { return int8_t(v); });
      Single(u, F16(b.d), F16(b.m));
      return;
    }
    case BlockType::Q5_0: {
      const auto b = Load<BlockQ5_0>(p);
      Nibbles(b.qs, q, [&](int v, int j) { return int8_t((v | HighBit5(b.qh, j)) - 16); });
      Single(u, F16(b.d));
      return;
    }
    case BlockType::Q5_1: {
      const auto b = Load<BlockQ5_1>(p);
      Nibbles(b.qs, q, [&](int v, int j) { return int8_t(v | HighBit5(b.qh, j)); });
      Single(u, F16(b.d), F16(b.m));
      return;
    }
    case BlockType::Q8_0: {
      const auto b = Load<BlockQ8_0>(p);
      std::memcpy(q, b.qs, 32);
      Single(u, F16(b.d));
      return;
    }
    case BlockType::IQ4_NL: {
      const auto b = Load<BlockIq4Nl>(p);
      Nibbles(b.qs, q, [](int v, int) { return kIq4nl[v]; });
      Single(u, F16(b.d));
      return;
    }
    case BlockType::Q2_K: {
      // Values 128·h + 32·k + l (h < 2, k < 4, l < 32): bits 2k..2k+1 of qs[32·h + l]; sub-block
      // i = 8h + 2k + l/16 has scale d·(scales[i] & 15) and min -(dmin·(scales[i] >> 4)).
      const auto b = Load<BlockQ2K>(p);
      const float d = F16(b.d), dmin = F16(b.dmin);
      for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
          for (int l = 0; l < 32; l++) q[128 * h + 32 * k + l] = int8_t((b.qs[32 * h + l] >> (2 * k)) & 3);
      for (int i = 0; i < 16; i++) {
        u->scale[i] = d * float(b.scales[i] & 0xF);
        u->min[i] = -(dmin * float(b.scales[i] >> 4));
      }
      u->values = 256, u->sub = 16, u->has_min = true;
      return;
    }
    case BlockType::Q3_K: {
      // The Q2_K bit positions for the low 2 bits; the 3rd bit (value 128·h + 32·k + l) is bit
      // 4h + k of hmask[l]: set means +0, clear means -4.
      const auto b = Load<BlockQ3K>(p);
      const float d = F16(b.d);
      for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
          for (int l = 0; l < 32; l++) {
            const int low = (b.qs[32 * h + l] >> (2 * k)) & 3;
            const bool high = (b.hmask[l] >> (4 * h + k)) & 1;
            q[128 * h + 32 * k + l] = int8_t(low - (high ? 0 : 4));
          }
      for (int i = 0; i < 16; i++) u->scale[i] = d * float(ScaleQ3K(i, b.scales));
      u->values = 256, u->sub = 16;
      return;
    }
    case BlockType::Q4_K:
    case BlockType::Q5_K: {
      // Values 64·h + l (h < 4, l < 32): low nibble of qs[32·h + l]; 64·h + 32 + l: its high
      // nibble. Q5_K's 5th bit of value 32·j + l is bit j of qh[l].
      const bool five = type == BlockType::Q5_K;
      const auto b4 = five ? BlockQ4K{} : Load<BlockQ4K>(p);
      const auto b5 = five ? Load<BlockQ5K>(p) : BlockQ5K{};
      const uint16_t dh = five ? b5.d : b4.d, dminh = five ? b5.dmin : b4.dmin;
      const uint8_t* scales = five ? b5.scales : b4.scales;
      const uint8_t* qs = five ? b5.qs : b4.qs;
      for (int h = 0; h < 4; h++)
        for (int l = 0; l < 32; l++) {
          q[64 * h + l] = int8_t(qs[32 * h + l] & 0xF);
          q[64 * h + 32 + l] = int8_t(qs[32 * h + l] >> 4);
        }
      if (five)
        for (int j = 0; j < 8; j++)
          for (int l = 0; l < 32; l++) q[32 * j + l] = int8_t(q[32 * j + l] | (((b5.qh[l] >> j) & 1) << 4));
      const float d = F16(dh), dmin = F16(dminh);
      for (int j = 0; j < 8; j++) {
        int sc, m;
        ScaleMinK4(j, scales, &sc, &m);
        u->scale[j] = d * float(sc);
        u->min[j] = -(dmin * float(m));
      }
      u->values = 256, u->sub = 32, u->has_min = true;
      return;
    }
    case BlockType::Q6_K: {
      // Values 128·h + 32·k + l (h < 2, k < 4, l < 32): 4 low bits from ql[64·h + l + 32·(k & 1)]
      // (low nibble for k < 2, high for k >= 2), 2 high bits from bits 2k..2k+1 of qh[32·h + l]; - 32.
      const auto b = Load<BlockQ6K>(p);
      const float d = F16(b.d);
      for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
          for (int l = 0; l < 32; l++) {
            const uint8_t lowbyte = b.ql[64 * h + l + 32 * (k & 1)];
            const int low = k < 2 ? lowbyte & 0xF : lowbyte >> 4;
            const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
            q[128 * h + 32 * k + l] = int8_t((low | (high << 4)) - 32);
          }
      for (int i = 0; i < 16; i++) u->scale[i] = d * float(b.scales[i]);
      u->values = 256, u->sub = 16;
      return;
    }
    case BlockType::IQ4_XS: {
      const auto b = Load<BlockIq4Xs>(p);
      const float d = F16(b.d);
      for (int j = 0; j < 8; j++) {
        Nibbles(b.qs + 16 * j, q + 32 * j, [](int v, int) { return kIq4nl[v]; });
        u->scale[j] = d * float(ScaleIq4Xs(j, b));
      }
      u->values = 256, u->sub = 32;
      return;
    }
    case BlockType::MXFP4: {
      const auto b = Load<BlockMxfp4>(p);
      Nibbles(b.qs, q, [](int v, int) { return kMxfp4[v]; });
      Single(u, E8m0Half(b.e));
      return;
    }
    case BlockType::kCount:
      break;
  }
}

void DequantizeBlocks(BlockType type, const uint8_t* blocks, float* x, int64_t n) {
  const BlockInfo& info = InfoOf(type);
  UnpackedBlock u;
  for (int64_t b = 0; b < n / info.values; b++) {
    UnpackBlock(type, blocks + b * info.bytes, &u);
    float* out = x + b * info.values;
    if (u.has_min)
      for (int i = 0; i < u.values; i++) out[i] = u.scale[i / u.sub] * float(u.q[i]) + u.min[i / u.sub];
    else
      for (int i = 0; i < u.values; i++) out[i] = u.scale[i / u.sub] * float(u.q[i]);
  }
}

}  // namespace kernels
}  // namespace weightmap
