// Memory for weight copies made at load (a matrix quantized or converted once, then streamed from
// memory at every token). Decode reads such a copy end to end at every step, hundreds of MB, so
// with 4 KB pages nearly every page costs a TLB miss and a page walk; the hardware prefetchers stop
// at page boundaries, so the walk and the first lines of each page land on the critical path. On
// Linux a copy of 2 MB or more is mapped 2 MB-aligned and marked MADV_HUGEPAGE (transparent huge
// pages in `madvise` mode, the common default): Q8 decode of 8 rows ran 2.6× faster on a matrix
// larger than L3 (35 → 91 G MAC/s on one Zen 5 core), one row 1.4×. Elsewhere, or when the kernel
// declines, it is ordinary memory: only the speed differs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weightmap {

class WeightBuffer {
 public:
  WeightBuffer() = default;
  ~WeightBuffer() { Release(); }
  WeightBuffer(WeightBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_), mapped_(o.mapped_) {
    o.data_ = nullptr, o.bytes_ = 0, o.mapped_ = false;
  }
  WeightBuffer& operator=(WeightBuffer&& o) noexcept;
  WeightBuffer(const WeightBuffer&) = delete;
  WeightBuffer& operator=(const WeightBuffer&) = delete;

  // `bytes` of uninitialized memory (the previous contents are freed); throws std::bad_alloc.
  void Allocate(size_t bytes);
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void Release();
  void* data_ = nullptr;
  size_t bytes_ = 0;
  bool mapped_ = false;  // mmap'ed (munmap it) rather than operator new'ed
};

}  // namespace weightmap
