// vpdpbusd (u8 × s8 dot products of 4 bytes into int32 lanes) on ymm or zmm, with the accumulator
// as a tied asm operand under GCC: GCC 12 copies the accumulator to another register and back
// around every vpdpbusd of the intrinsic (two extra moves per dot in the matvec and matmul loops).
// Two forms, as the loops were measured: Dpbusd lets the second operand come from memory;
// DpbusdReg keeps it in a register (the ggml GEMM's activation tile: from memory, Q4_K_M prefill ran
// 2–10% slower). For the AVX-512 VNNI translation units only, and in an anonymous namespace as
// tables.h asks of code built with an instruction set's flags.
#pragma once

#include <immintrin.h>

namespace weightmap {
namespace kernels {
namespace {

template <class V>
inline V Dpbusd(V acc, V u, V x) {
#if defined(__GNUC__) && !defined(__clang__)
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "vm"(x));
  return acc;
#else
  if constexpr (sizeof(V) == 64) return _mm512_dpbusd_epi32(acc, u, x);
  else return _mm256_dpbusd_epi32(acc, u, x);
#endif
}

template <class V>
inline V DpbusdReg(V acc, V u, V x) {
#if defined(__GNUC__) && !defined(__clang__)
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(x));
  return acc;
#else
  return Dpbusd(acc, u, x);
#endif
}

}  // namespace
}  // namespace kernels
}  // namespace weightmap
