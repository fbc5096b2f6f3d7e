// A fixed pool of worker threads that splits index ranges across cores. Workers block on a
// condition variable between jobs (no spinning that would starve Node's own thread); the calling
// thread takes a share of every job itself.
//
// Details (additive to the first draft): a worker polls for the next job for up to
// WEIGHTMAP_SPIN_US µs (default 20; 0 turns it off) before sleeping, and the caller of
// ParallelFor, once its own chunks are done, polls for the other threads' chunks for up to
// max(100, that) µs; both poll with the CPU's pause instruction only (no sched_yield, which on an
// idle core is a system call per poll). The kernels of a decode step come back to back (gaps of
// a few µs) and a sleeping thread costs a wake-up of ~30 µs on this VM per call (measured: median
// start of the worker's chunk 29 µs after the caller's). Against the first draft's longer polls
// with sched_yield (100 and 500 µs): decode at 2 threads on the loaded 2-core machine (load 17-21,
// scripts/bench/decoder.js --position 16, interleaved) 10.2 and 12.0 tok/s vs 7.0-9.3, at the
// same process CPU time per token (31.5-31.8 ms vs 31.4-33.2; 1 thread: 30.5). A ParallelFor
// called from inside a job of the same pool runs inline on the calling thread. An exception
// thrown by fn is rethrown to the caller of ParallelFor (the first one; the other chunks still
// run).
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
