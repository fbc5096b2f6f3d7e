// The machine's arithmetic ceiling, for the benchmarks' "share of peak" figures: how many 512-bit
// int8 dot products (vpdpbusd, 64 multiply-adds each) and f32 FMAs (vfmadd231ps, 16 each) one
// core retires per second, with 12 independent accumulators so that only throughput limits; and
// the read bandwidth of N cores (sums over buffers far larger than the caches).
// The arithmetic rates are per second of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), not of the wall clock,
// so time the scheduler gives to other processes on a loaded machine does not lower them; with a
// CPU index the probe pins itself to that CPU, so N probes measure N distinct cores.
// The read bandwidth of N cores streaming at once is measured by wall clock (`read N`): memory is shared,
// so per-core CPU-time rates do not add up (a probe that reads while the other still computes has
// the memory to itself). N pinned threads each sum their own buffer, started together; a pass is
// the wall time until the last one ends, and the best pass of the run is reported (other load can
// only lengthen a pass).
// Built and run by scripts/bench/peak.js (x86-64 Linux with AVX-512 VNNI):
//   peak-probe SECONDS [CPU]  ->  {"int8_macs_per_s": ..., "f32_macs_per_s": ..., "cpu": CPU|-1}
//   peak-probe read THREADS SECONDS  ->  {"read_bytes_per_s": ..., "threads": THREADS}
#include <immintrin.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

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

// Sums `bytes` of `buffer` (64-byte aligned) once, four independent accumulators (the loads alone
// limit); returns the sum so the loads cannot be dropped.
long long SumOnce(const uint8_t* buffer, size_t bytes) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (size_t i = 0; i < bytes; i += 256) {
    a = _mm512_add_epi64(a, _mm512_load_si512(buffer + i));
    b = _mm512_add_epi64(b, _mm512_load_si512(buffer + i + 64));
    c = _mm512_add_epi64(c, _mm512_load_si512(buffer + i + 128));
    d = _mm512_add_epi64(d, _mm512_load_si512(buffer + i + 192));
  }
  return _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
}

bool Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

// Bytes per wall-clock second that `threads` pinned threads read together, each its own `bytes`:
// the best pass over about `seconds`.
double ConcurrentReadRate(int threads, size_t bytes, double seconds) {
  using Clock = std::chrono::steady_clock;
  const int cpus = int(std::thread::hardware_concurrency());
  std::vector<uint8_t*> buffers(threads);
  for (auto& b : buffers) {
    b = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
    if (!b) return 0;
    std::memset(b, 1, bytes);
  }
  std::atomic<int> pass{-1}, done{0};
  std::atomic<long long> sink{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      Pin(t % cpus);
      for (int seen = 0;; seen++) {
        int p;
        while ((p = pass.load(std::memory_order_acquire)) < seen) std::this_thread::yield();
        if (p == 1 << 30) return;
        sink += SumOnce(buffers[t], bytes);
        done.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  double best = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  for (int p = 0; p < 3 || Clock::now() < end; p++) {
    done.store(0);
    const auto t0 = Clock::now();
    pass.store(p, std::memory_order_release);
    while (done.load(std::memory_order_acquire) < threads) std::this_thread::yield();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, double(bytes) * threads / s);
  }
  pass.store(1 << 30, std::memory_order_release);
  for (auto& w : workers) w.join();
  for (auto* b : buffers) std::free(b);
  volatile long long keep = sink.load();
  (void)keep;
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "read") == 0) {
    const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
    const double seconds = argc > 3 ? std::atof(argv[3]) : 1.0;
    if (threads < 1 || threads > 256) return 1;
    // 512 MiB per thread: 16x the L3 of the machines this runs on, touched once before timing.
    const double read = ConcurrentReadRate(threads, size_t(512) << 20, seconds);
    if (read <= 0) return 1;
    std::printf("{\"read_bytes_per_s\": %.4e, \"threads\": %d}\n", read, threads);
    return 0;
  }
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
