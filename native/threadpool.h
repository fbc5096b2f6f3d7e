// A fixed pool of worker threads that splits index ranges across cores. Workers block on a
// condition variable between jobs (no spinning that would starve Node's own thread); the calling
// thread takes a share of every job itself.
//
// Details (additive to the first draft): WEIGHTMAP_SPIN_US=N (default 0) makes a worker poll for
// the next job, and the caller for the last chunk, for up to N µs before sleeping. It can save the
// wake-up latency between the back-to-back kernels of a decode step on an idle machine; on a
// loaded 2-core machine it measured slower (the spinning thread competes for the core), hence
// off by default. The caller of ParallelFor, once its own chunks are done, polls for the other
// threads' chunks for up to 500 µs (or N) before sleeping, yielding the core after the first
// 20 µs: the threads of a decode matvec finish within µs of each other, and a sleeping caller
// costs a wake-up of tens of µs (a VM's vCPU) per call. A ParallelFor called from
// inside a job of the same pool runs inline on the calling thread. An exception thrown by fn is
// rethrown to the caller of ParallelFor (the first one; the other chunks still run).
#pragma once

#include <cstdint>
#include <functional>

namespace weightmap {

class ThreadPool {
 public:
  // threads >= 1 (the caller counts as one). 0 means the number of physical cores.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;

  // Calls fn(begin, end) over disjoint chunks covering [0, n), each a multiple of `grain`
  // (except the last), and returns when all are done. Thread-safe: concurrent callers queue.
  // There are at most size() chunks, of equal size up to the rounding to `grain`; the threads
  // claim them in turn, so a thread that is late to wake up leaves its chunk to the others.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  // Physical cores this process may run on (Linux: distinct (package, core) pairs among the CPUs
  // in its affinity mask; elsewhere, or when that fails, std::thread::hardware_concurrency()).
  static int PhysicalCores();

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace weightmap
