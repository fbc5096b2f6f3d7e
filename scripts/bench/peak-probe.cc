// The machine's arithmetic ceiling, for the benchmarks' "share of peak" figures: how many 512-bit
// int8 dot products (vpdpbusd, 64 multiply-adds each) and f32 FMAs (vfmadd231ps, 16 each) one
// core retires per second, with 12 independent accumulators so that only throughput limits; and
// the read bandwidth one core draws from memory (sums over a buffer far larger than the caches).
// Rates are per second of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), not of the wall clock,
// so time the scheduler gives to other processes on a loaded machine does not lower them; with a
// CPU index the probe pins itself to that CPU, so N probes measure N distinct cores.
// Built and run by scripts/bench/peak.js (x86-64 Linux with AVX-512 VNNI):
//   peak-probe SECONDS [CPU]  ->  {"int8_macs_per_s": ..., "f32_macs_per_s": ...,
//                                  "read_bytes_per_s": ..., "cpu": CPU|-1}
#include <immintrin.h>
#include <sched.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

// Bytes per CPU-second that summing `bytes` of `buffer` (64-byte aligned) reads, over about
// `seconds` of CPU time; four independent accumulators, so the loads alone limit.
double ReadRate(const uint8_t* buffer, size_t bytes, double seconds) {
  __m512i sink = _mm512_setzero_si512();
  double spent = 0;
  size_t passes = 0;
  while (spent < seconds) {
    const double t0 = ThreadCpuSeconds();
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    for (size_t i = 0; i < bytes; i += 256) {
      a = _mm512_add_epi64(a, _mm512_load_si512(buffer + i));
      b = _mm512_add_epi64(b, _mm512_load_si512(buffer + i + 64));
      c = _mm512_add_epi64(c, _mm512_load_si512(buffer + i + 128));
      d = _mm512_add_epi64(d, _mm512_load_si512(buffer + i + 192));
    }
    sink = _mm512_add_epi64(sink, _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
    spent += ThreadCpuSeconds() - t0;
    ++passes;
  }
  volatile long long keep = _mm512_reduce_add_epi64(sink);
  (void)keep;
  return double(bytes) * double(passes) / spent;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  const int cpu = argc > 2 ? std::atoi(argv[2]) : -1;
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      std::perror("sched_setaffinity");
      return 1;
    }
  }
  const double int8 = Rate(Int8Loop, seconds) * 64;
  const double f32 = Rate(F32Loop, seconds) * 16;
  // 512 MiB: 16× the L3 of the machines this runs on, touched once before timing.
  const size_t bytes = size_t(512) << 20;
  uint8_t* buffer = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
  if (!buffer) return 1;
  std::memset(buffer, 1, bytes);
  const double read = ReadRate(buffer, bytes, seconds);
  std::free(buffer);
  std::printf("{\"int8_macs_per_s\": %.4e, \"f32_macs_per_s\": %.4e, \"read_bytes_per_s\": %.4e, \"cpu\": %d}\n", int8, f32,
              read, cpu);
  return 0;
}
