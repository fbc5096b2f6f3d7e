// The read-bandwidth probe's inner loop (kernels.readBandwidth): the sum of the 8-byte words of a
// buffer, read with the widest loads the active table's ISA has, so that the probe streams as fast
// as the fastest kernel could and the decode bound it gives (scripts/bench/decoder.js) is a true
// ceiling. With 16-byte loads it read 37 GB/s on the Zen 5 machine where 64-byte loads read 41
// (1 thread, 640 MB), and decode at 1 thread streamed faster than "the bound".
#pragma once

#include <cstdint>

#include "kernels/tables.h"  // WEIGHTMAP_KERNELS_X86

namespace weightmap {
namespace kernels {

// Σ of the 8-byte words [w0, w1) of base (wrapping), prefetching `prefetch` bytes ahead when > 0.
uint64_t SumWords(const uint8_t* base, int64_t w0, int64_t w1, int64_t prefetch);

#if WEIGHTMAP_KERNELS_X86
// The AVX-512 body (read_probe_avx512.cc; only called when the active table is an AVX-512 one):
// Σ of the whole 256-byte blocks from *w on, *w advanced past them (SumWords sums the rest).
uint64_t SumBlocksAvx512(const uint8_t* base, int64_t* w, int64_t w1, int64_t prefetch);
#endif

}  // namespace kernels
}  // namespace weightmap
