// The machine's arithmetic ceiling, for the benchmarks' "share of peak" figures: how many 512-bit
// int8 dot products (vpdpbusd, 64 multiply-adds each) and f32 FMAs (vfmadd231ps, 16 each) one
// core retires per second, with 12 independent accumulators so that only throughput limits (the
// read bandwidth is the addon's probe: scripts/bench/read-bandwidth.js).
// The arithmetic rates are per second of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), not of the wall clock,
// so time the scheduler gives to other processes on a loaded machine does not lower them; with a
// CPU index the probe pins itself to that CPU, so N probes measure N distinct cores.
// Built and run by scripts/bench/peak.js (x86-64 Linux with AVX-512 VNNI):
//   peak-probe SECONDS [CPU]  ->  {"int8_macs_per_s": ..., "f32_macs_per_s": ..., "cpu": CPU|-1}
#include <immintrin.h>
#include <sched.h>
#include <time.h>

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

double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Instructions per CPU-second of `loop`, over about `seconds` of CPU time.
double Rate(void (*loop)(long), double seconds) {
  long iterations = 1 << 20;
  for (;;) {
    const double t0 = ThreadCpuSeconds();
    loop(iterations);
    const double s = ThreadCpuSeconds() - t0;
    if (s >= seconds) return 12.0 * double(iterations) / s;
    iterations *= 2;
  }
}

bool Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  const int cpu = argc > 2 ? std::atoi(argv[2]) : -1;
  if (cpu >= 0 && !Pin(cpu)) {
    std::perror("sched_setaffinity");
    return 1;
  }
  const double int8 = Rate(Int8Loop, seconds) * 64;
  const double f32 = Rate(F32Loop, seconds) * 16;
  std::printf("{\"int8_macs_per_s\": %.4e, \"f32_macs_per_s\": %.4e, \"cpu\": %d}\n", int8, f32, cpu);
  return 0;
}
