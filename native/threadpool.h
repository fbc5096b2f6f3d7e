// A fixed pool of worker threads that splits index ranges across cores. Workers block on a
// condition variable between jobs (no spinning that would starve Node's own thread); the calling
// thread takes a share of every job itself.
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
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  static int PhysicalCores();

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace weightmap
