#include "checksum/crc32.h"

#include <algorithm>
#include <system_error>
#include <thread>
#include <vector>

#if (defined(__x86_64__) || defined(_M_X64))
#define WEIGHTMAP_CRC32_X86 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#else
#define WEIGHTMAP_CRC32_X86 0
#endif

namespace weightmap {
namespace checksum {

namespace {

constexpr uint32_t kPoly = 0xEDB88320u;  // the generator, reflected, without its x^32 term

// tables[k][b]: the CRC state after byte b followed by k zero bytes, from state 0. Slice-by-8
// feeds 8 bytes at once: byte i of the group is looked up in the table of its distance to the end.
struct Tables {
  uint32_t t[8][256];
  Tables() {
    for (uint32_t b = 0; b < 256; b++) {
      uint32_t c = b;
      for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
      for (uint32_t b = 0; b < 256; b++) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  }
};

const Tables& CrcTables() {
  static const Tables tables;
  return tables;
}

inline uint32_t LoadLE32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

#if WEIGHTMAP_CRC32_X86
bool DetectPclmul() {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
#if defined(_MSC_VER)
  int v[4];
  __cpuid(v, 1);
  ecx = uint32_t(v[2]);
#else
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
#endif
  const bool pclmul = ecx & (1u << 1);
  const bool sse41 = ecx & (1u << 19);
  return pclmul && sse41;
}
#endif

}  // namespace

uint32_t Crc32Table(const uint8_t* data, size_t length, uint32_t previous) {
  const Tables& tb = CrcTables();
  const auto& t = tb.t;
  uint32_t c = ~previous;
  while (length >= 8) {
    const uint32_t lo = c ^ LoadLE32(data);
    const uint32_t hi = LoadLE32(data + 4);
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    data += 8;
    length -= 8;
  }
  while (length--) c = t[0][(c ^ *data++) & 0xFF] ^ (c >> 8);
  return ~c;
}

bool Crc32HasPclmul() {
#if WEIGHTMAP_CRC32_X86
  static const bool has = DetectPclmul();
  return has;
#else
  return false;
#endif
}

uint32_t Crc32(const uint8_t* data, size_t length, uint32_t previous, Crc32Impl impl) {
#if WEIGHTMAP_CRC32_X86
  if (impl != Crc32Impl::Table && Crc32HasPclmul()) return Crc32Pclmul(data, length, previous);
#else
  (void)impl;
#endif
  return Crc32Table(data, length, previous);
}

uint32_t Crc32MulMod(uint32_t a, uint32_t b) {
  // Shift-and-add: for each coefficient of a from x^0 up, add b·x^i, multiplying b by x each step
  // (in reflected order a shift right; x^32 wraps to the generator).
  uint32_t product = 0;
  for (uint32_t bit = 0x80000000u; bit != 0; bit >>= 1) {
    if (a & bit) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

uint32_t Crc32XPowMod(uint64_t n) {
  uint32_t power = 0x80000000u;  // x^0
  uint32_t square = 0x40000000u;  // x^1, then x^2, x^4, ...
  for (; n != 0; n >>= 1) {
    if (n & 1) power = Crc32MulMod(power, square);
    square = Crc32MulMod(square, square);
  }
  return power;
}

uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b) {
  return Crc32MulMod(crc_a, Crc32XPowMod(8 * length_b)) ^ crc_b;
}

uint32_t Crc32Parallel(const uint8_t* data, size_t length, uint32_t previous, int threads, Crc32Impl impl) {
  size_t pieces = size_t(std::max(1, threads));
  pieces = std::min(pieces, std::max<size_t>(1, length / kCrc32MinPieceBytes));
  if (pieces <= 1) return Crc32(data, length, previous, impl);
  // Piece i covers [starts[i], starts[i + 1]); piece 0 continues `previous`, the others start at
  // 0 and are joined in order. The calling thread takes piece 0.
  std::vector<size_t> starts(pieces + 1);
  for (size_t i = 0; i <= pieces; i++) starts[i] = length / pieces * i + std::min(i, length % pieces);
  std::vector<uint32_t> crcs(pieces);
  auto piece = [&](size_t i) { crcs[i] = Crc32(data + starts[i], starts[i + 1] - starts[i], i ? 0 : previous, impl); };
  std::vector<std::thread> helpers;
  helpers.reserve(pieces - 1);
  size_t started = 1;
  try {
    for (; started < pieces; started++) helpers.emplace_back(piece, started);
  } catch (const std::system_error&) {
    // No thread to be had: the pieces not handed out run here.
  }
  for (size_t i = started; i < pieces; i++) piece(i);
  piece(0);
  for (auto& h : helpers) h.join();
  uint32_t crc = crcs[0];
  for (size_t i = 1; i < pieces; i++) crc = Crc32Combine(crc, crcs[i], starts[i + 1] - starts[i]);
  return crc;
}

}  // namespace checksum
}  // namespace weightmap
