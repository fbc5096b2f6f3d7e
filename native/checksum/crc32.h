// CRC-32 as zlib computes it (IEEE 802.3: reflected generator 0xEDB88320, state inverted before
// and after), so Crc32(data, n, previous) continues a CRC exactly like zlib's crc32(previous, ...).
// Two implementations give the same result: a portable slice-by-8 table walk, and on x86-64 CPUs
// with PCLMULQDQ a carry-less-multiply fold of 128-bit lanes (crc32_pclmul.cc). Large buffers can
// be split over threads and the pieces joined with Crc32Combine.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weightmap {
namespace checksum {

enum class Crc32Impl {
  Auto,    // PCLMULQDQ where the CPU has it, else the table
  Table,   // always the portable slice-by-8 table walk
  Pclmul,  // PCLMULQDQ; falls back to the table where the CPU lacks it
};

// CRC-32 of data[0, length), continuing from `previous` (the CRC of the bytes before; 0 to start).
uint32_t Crc32(const uint8_t* data, size_t length, uint32_t previous = 0, Crc32Impl impl = Crc32Impl::Auto);

// The same over up to `threads` threads (the caller counts as one): equal pieces computed side by
// side and joined with Crc32Combine. Pieces are at least kMinPieceBytes, so small buffers use one.
constexpr size_t kCrc32MinPieceBytes = size_t(1) << 20;
uint32_t Crc32Parallel(const uint8_t* data, size_t length, uint32_t previous, int threads,
                       Crc32Impl impl = Crc32Impl::Auto);

// The portable slice-by-8 walk.
uint32_t Crc32Table(const uint8_t* data, size_t length, uint32_t previous);

// Whether Crc32Impl::Auto / Pclmul run the PCLMULQDQ code on this CPU.
bool Crc32HasPclmul();

// crc(A || B) from crc(A), crc(B) and |B| in bytes: crc(A)·x^(8·|B|) + crc(B) mod P (the initial
// and final inversions cancel between the two terms).
uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b);

// Polynomials over GF(2) of degree < 32 in CRC-32's reflected order: bit 31 holds x^0, bit 0 x^31.
// x^n mod P, and a·b mod P. Used for Crc32Combine and for the folding constants.
uint32_t Crc32XPowMod(uint64_t n);
uint32_t Crc32MulMod(uint32_t a, uint32_t b);

#if defined(__x86_64__) || defined(_M_X64)
// The PCLMULQDQ fold (crc32_pclmul.cc, built with -mpclmul -msse4.1); call only where
// Crc32HasPclmul() is true.
uint32_t Crc32Pclmul(const uint8_t* data, size_t length, uint32_t previous);
#endif

}  // namespace checksum
}  // namespace weightmap
