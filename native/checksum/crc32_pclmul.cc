// CRC-32 by folding with carry-less multiplication (PCLMULQDQ), built with -mpclmul -msse4.1.
//
// The math, in CRC-32's reflected bit order: a 16-byte block loaded little-endian holds, at bit i
// of the 128-bit register, the coefficient of x^(127-i) (the first byte in memory carries the
// highest powers). The CRC state of a message M is M·x^32 mod P, so any A with A ≡ M (mod P) gives
// the same CRC. Appending T more bits B turns M into M·x^T + B ≡ A·x^T + B. Split
// A = H·x^64 + L (H: the register's low quadword, L: its high one); then
//   A·x^T ≡ H·(x^(T+64) mod P) + L·(x^T mod P),
// two 64×32-bit carry-less products of degree < 96, which fit the register again. A carry-less
// product of two reflected 64-bit operands comes out as a reflected 127-bit value: read as 128
// bits it is the product times x, so the constants are x^(T+63) and x^(T-1) mod P.
// Eight registers fold 128 bytes per step (T = 1024) to keep the multiplier busy; they are then
// folded into one (T = 128 each), and what is left (a 16-byte remainder A and < 16 bytes of tail)
// is finished by the table walk: A·x^32 mod P is the CRC state of A's 16 bytes from state 0.
#if defined(__x86_64__) || defined(_M_X64)

#include <immintrin.h>
#include <wmmintrin.h>

#include <cstring>

#include "checksum/crc32.h"

namespace weightmap {
namespace checksum {

namespace {

// A reflected polynomial of degree < 32 (bit 31 = x^0) as a reflected 64-bit operand (bit 63 = x^0).
inline uint64_t AsOperand(uint32_t reflected) { return uint64_t(reflected) << 32; }

// Low quadword: the constant for H (x^(T+63) mod P); high quadword: the one for L (x^(T-1) mod P).
__m128i FoldConstants(uint64_t t_bits) {
  const uint64_t for_high = AsOperand(Crc32XPowMod(t_bits + 63));
  const uint64_t for_low = AsOperand(Crc32XPowMod(t_bits - 1));
  return _mm_set_epi64x(int64_t(for_low), int64_t(for_high));
}

struct Constants {
  __m128i fold1024 = FoldConstants(1024);  // one step of the 8-register loop
  __m128i fold128 = FoldConstants(128);    // one 16-byte block
};

const Constants& FoldingConstants() {
  static const Constants c;
  return c;
}

// A·x^T mod-P-equivalent, as a 128-bit value.
inline __m128i Fold(__m128i a, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

inline __m128i Load(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

constexpr size_t kMinFoldBytes = 256;  // below this the table walk is as fast

}  // namespace

uint32_t Crc32Pclmul(const uint8_t* data, size_t length, uint32_t previous) {
  if (length < kMinFoldBytes) return Crc32Table(data, length, previous);
  const Constants& k = FoldingConstants();
  // The inverted initial state adds ~previous·x^(8·length): the same as xoring it into the
  // message's first 4 bytes.
  __m128i x[8];
  for (int i = 0; i < 8; i++) x[i] = Load(data + 16 * i);
  x[0] = _mm_xor_si128(x[0], _mm_cvtsi32_si128(int(~previous)));
  data += 128;
  length -= 128;
  while (length >= 128) {
    for (int i = 0; i < 8; i++) x[i] = _mm_xor_si128(Fold(x[i], k.fold1024), Load(data + 16 * i));
    data += 128;
    length -= 128;
  }
  __m128i a = x[0];
  for (int i = 1; i < 8; i++) a = _mm_xor_si128(Fold(a, k.fold128), x[i]);
  while (length >= 16) {
    a = _mm_xor_si128(Fold(a, k.fold128), Load(data));
    data += 16;
    length -= 16;
  }
  uint8_t rest[16];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(rest), a);
  const uint32_t crc = Crc32Table(rest, 16, 0xFFFFFFFFu);  // state 0 in, A·x^32 mod P out (inverted)
  return Crc32Table(data, length, crc);
}

}  // namespace checksum
}  // namespace weightmap

#endif
