#include "engines/weight_buffer.h"

#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace weightmap {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
#if defined(__linux__)
size_t Rounded(size_t bytes) {  // to whole pages
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}
#endif
}

WeightBuffer& WeightBuffer::operator=(WeightBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    data_ = o.data_, bytes_ = o.bytes_, mapped_ = o.mapped_;
    o.data_ = nullptr, o.bytes_ = 0, o.mapped_ = false;
  }
  return *this;
}

void WeightBuffer::Allocate(size_t bytes) {
  Release();
  if (bytes == 0) return;
#if defined(__linux__)
  if (bytes >= kHugePage) {
    // Over-map by one huge page and trim, so that the buffer starts on a 2 MB boundary (a huge
    // page needs an aligned virtual range). The end is rounded to small pages only: a last,
    // partial 2 MB stays in 4 KB pages rather than faulting in a huge page half of padding.
    const size_t rounded = Rounded(bytes);
    void* raw = ::mmap(nullptr, rounded + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw != MAP_FAILED) {
      const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
      const uintptr_t aligned = (start + kHugePage - 1) & ~(uintptr_t(kHugePage) - 1);
      if (aligned > start) ::munmap(raw, aligned - start);
      const uintptr_t end = aligned + rounded, raw_end = start + rounded + kHugePage;
      if (raw_end > end) ::munmap(reinterpret_cast<void*>(end), raw_end - end);
      (void)::madvise(reinterpret_cast<void*>(aligned), rounded, MADV_HUGEPAGE);  // advice only
      data_ = reinterpret_cast<void*>(aligned);
      bytes_ = bytes;
      mapped_ = true;
      return;
    }
  }
#endif
  data_ = ::operator new(bytes);
  bytes_ = bytes;
}

void WeightBuffer::Release() {
  if (!data_) return;
#if defined(__linux__)
  if (mapped_) {
    ::munmap(data_, Rounded(bytes_));
  } else {
    ::operator delete(data_);
  }
#else
  ::operator delete(data_);
#endif
  data_ = nullptr, bytes_ = 0, mapped_ = false;
}

}  // namespace weightmap
