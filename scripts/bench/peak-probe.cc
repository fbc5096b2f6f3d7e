// The machine's arithmetic ceiling, for the benchmarks' "share of peak" figures: how many 512-bit
// int8 dot products (vpdpbusd, 64 multiply-adds each) and f32 FMAs (vfmadd231ps, 16 each) one
// core retires per second, with 12 independent accumulators so that only throughput limits.
// Built and run by scripts/bench/peak.js (x86-64 with AVX-512 VNNI):
//   peak-probe SECONDS  ->  {"int8_macs_per_s": ..., "f32_macs_per_s": ...}
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

// 12 independent vpdpbusd (or vfmadd231ps) per iteration, in registers the compiler cannot spill.
#define WM_TWELVE(op)                                                                         \
  op " %%zmm30,%%zmm31,%%zmm0\n" op " %%zmm30,%%zmm31,%%zmm1\n" op " %%zmm30,%%zmm31,%%zmm2\n"   \
  op " %%zmm30,%%zmm31,%%zmm3\n" op " %%zmm30,%%zmm31,%%zmm4\n" op " %%zmm30,%%zmm31,%%zmm5\n"   \
  op " %%zmm30,%%zmm31,%%zmm6\n" op " %%zmm30,%%zmm31,%%zmm7\n" op " %%zmm30,%%zmm31,%%zmm8\n"   \
  op " %%zmm30,%%zmm31,%%zmm9\n" op " %%zmm30,%%zmm31,%%zmm10\n" op " %%zmm30,%%zmm31,%%zmm11\n"

void Int8Loop(long iterations) {
  __asm__ volatile(
      "vpxord %%zmm30,%%zmm30,%%zmm30\n vpxord %%zmm31,%%zmm31,%%zmm31\n mov %0, %%rax\n"
      "1:\n" WM_TWELVE("vpdpbusd") "dec %%rax\n jnz 1b\n" ::"r"(iterations)
      : "rax", "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10", "zmm11",
        "zmm30", "zmm31");
}

void F32Loop(long iterations) {
  __asm__ volatile(
      "vpxord %%zmm30,%%zmm30,%%zmm30\n vpxord %%zmm31,%%zmm31,%%zmm31\n mov %0, %%rax\n"
      "1:\n" WM_TWELVE("vfmadd231ps") "dec %%rax\n jnz 1b\n" ::"r"(iterations)
      : "rax", "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10", "zmm11",
        "zmm30", "zmm31");
}

// Instructions per second of `loop`, over about `seconds`.
double Rate(void (*loop)(long), double seconds) {
  long iterations = 1 << 20;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    loop(iterations);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s >= seconds) return 12.0 * double(iterations) / s;
    iterations *= 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  const double int8 = Rate(Int8Loop, seconds) * 64;
  const double f32 = Rate(F32Loop, seconds) * 16;
  std::printf("{\"int8_macs_per_s\": %.4e, \"f32_macs_per_s\": %.4e}\n", int8, f32);
  return 0;
}
