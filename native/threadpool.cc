#include "threadpool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#define WEIGHTMAP_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define WEIGHTMAP_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define WEIGHTMAP_CPU_RELAX() ((void)0)
#endif

namespace weightmap {

namespace {

thread_local const void* current_pool = nullptr;  // the pool whose job this thread is running

// How long a worker polls for the next job before sleeping, unless WEIGHTMAP_SPIN_US says: the
// gaps between the parallel kernels of a decode step (norms, RoPE, KV stores on the calling
// thread) are a few µs; the gap between two steps (a round trip through JS) is longer and is
// slept through.
constexpr int kWorkerSpinMicros = 20;

int SpinMicros() {
  const char* env = std::getenv("WEIGHTMAP_SPIN_US");
  if (!env || !*env) return kWorkerSpinMicros;
  const long v = std::strtol(env, nullptr, 10);
  return v < 0 ? 0 : (v > 100000 ? 100000 : int(v));
}

// How long the caller of ParallelFor polls for the other threads' chunks before sleeping: they
// are running (a chunk nobody has claimed the caller runs itself), so the wait is the imbalance
// between chunks, short unless a thread was preempted.
constexpr int kCallerSpinMicros = 100;

// Polls `done` for at most `micros` with the CPU's pause between polls; true if it became true.
// No sched_yield: on an idle core it is a system call per poll (perf showed spinning and
// sched_yield at 11% of decode samples at 2 threads), and a thread that needs the core gets it
// from the scheduler once the poll ends in a sleep.
template <class Pred>
bool SpinUntil(int micros, Pred done) {
  if (micros <= 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  for (int i = 0;; ++i) {
    if (done()) return true;
    WEIGHTMAP_CPU_RELAX();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return done();
  }
}

}  // namespace

struct ThreadPool::Impl {
  int threads = 1;
  int spin_us = 0;
  std::vector<std::thread> workers;

  std::mutex submit;  // one job at a time: concurrent ParallelFor callers queue here

  // The current job. Written by the submitting thread under `mu` while no worker is inside a job
  // (active == 0); read by workers after they join under `mu`.
  std::mutex mu;
  std::condition_variable wake;  // workers wait here for a new job
  std::condition_variable done;  // the submitter waits here for the last chunk / last worker
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0, chunk = 0, chunks = 0;
  bool open = false;  // workers may join the current job
  bool stop = false;
  std::exception_ptr error;
  std::atomic<uint64_t> generation{0};  // bumped per job; polled by spinning workers
  std::atomic<int64_t> next{0};         // next chunk to claim
  std::atomic<int64_t> remaining{0};    // chunks not yet finished
  std::atomic<int> active{0};           // workers inside the current job

  void RunChunks() {
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) return;
      const int64_t b = c * chunk, e = std::min(n, b + chunk);
      try {
        (*fn)(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
      if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mu);
        done.notify_all();
      }
    }
  }

  void Worker() {
#if defined(__linux__)
    pthread_setname_np(pthread_self(), "weightmap-pool");  // per-thread CPU time and profiles name it
#endif
    current_pool = this;
    uint64_t seen = 0;
    for (;;) {
      SpinUntil(spin_us, [&] { return generation.load(std::memory_order_acquire) != seen; });
      {
        std::unique_lock<std::mutex> lock(mu);
        wake.wait(lock, [&] { return stop || generation.load(std::memory_order_relaxed) != seen; });
        if (stop) return;
        seen = generation.load(std::memory_order_relaxed);
        if (!open) continue;  // woke too late: that job is over
        active.fetch_add(1, std::memory_order_relaxed);
      }
      RunChunks();
      if (active.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mu);
        done.notify_all();
      }
    }
  }
};

ThreadPool::ThreadPool(int threads) : impl_(new Impl) {
  if (threads <= 0) threads = PhysicalCores();
  impl_->threads = std::max(1, threads);
  impl_->spin_us = SpinMicros();
  try {
    for (int i = 1; i < impl_->threads; ++i) impl_->workers.emplace_back([this] { impl_->Worker(); });
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      impl_->stop = true;
    }
    impl_->wake.notify_all();
    for (auto& t : impl_->workers) t.join();
    delete impl_;
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> submit(impl_->submit);
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  for (auto& t : impl_->workers) t.join();
  delete impl_;
}

int ThreadPool::size() const { return impl_->threads; }

void ThreadPool::ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  Impl& p = *impl_;
  const int64_t units = (n + grain - 1) / grain;
  const int64_t want = std::min<int64_t>(p.threads, units);
  if (want <= 1 || current_pool == &p) {
    fn(0, n);
    return;
  }
  const int64_t chunk = ((units + want - 1) / want) * grain;

  std::lock_guard<std::mutex> submit(p.submit);
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.fn = &fn;
    p.n = n;
    p.chunk = chunk;
    p.chunks = (n + chunk - 1) / chunk;
    p.error = nullptr;
    p.next.store(0, std::memory_order_relaxed);
    p.remaining.store(p.chunks, std::memory_order_relaxed);
    p.open = true;
    p.generation.fetch_add(1, std::memory_order_release);
  }
  p.wake.notify_all();

  const void* outer = current_pool;
  current_pool = &p;
  p.RunChunks();
  current_pool = outer;

  // The other threads' last chunks end about when the caller's does (decode matvecs split with
  // kernels::ParallelRowBlocks end within a block of each other): wait for them awake, since
  // sleeping costs a wake-up (tens of µs on a VM) per call.
  SpinUntil(std::max(p.spin_us, kCallerSpinMicros), [&] {
    return p.remaining.load(std::memory_order_acquire) == 0 && p.active.load(std::memory_order_acquire) == 0;
  });
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(p.mu);
    p.done.wait(lock, [&] { return p.remaining.load(std::memory_order_acquire) == 0; });
    p.open = false;  // late wakers skip this job; the ones inside find no chunk left and leave
    p.done.wait(lock, [&] { return p.active.load(std::memory_order_acquire) == 0; });
    error = p.error;
    p.error = nullptr;
    p.fn = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

int ThreadPool::PhysicalCores() {
  const int fallback = std::max(1u, std::thread::hardware_concurrency());
#if defined(__linux__)
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return fallback;
  std::set<std::pair<long, long>> cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream core_file(base + "core_id"), pkg_file(base + "physical_package_id");
    long core = -1, pkg = -1;
    if (!(core_file >> core) || !(pkg_file >> pkg)) {
      cores.emplace(-1, cpu);  // no topology: count the CPU itself
      continue;
    }
    cores.emplace(pkg, core);
  }
  if (cores.empty()) return fallback;
  int count = int(cores.size());
  // A cgroup v2 CPU quota (containers started with --cpus) caps the useful threads too.
  std::ifstream quota_file("/sys/fs/cgroup/cpu.max");
  std::string quota;
  long period = 0;
  if (quota_file >> quota >> period && quota != "max" && period > 0) {
    const long q = std::strtol(quota.c_str(), nullptr, 10);
    if (q > 0) count = std::max(1, std::min(count, int((q + period - 1) / period)));
  }
  return count;
#else
  return fallback;
#endif
}

}  // namespace weightmap
