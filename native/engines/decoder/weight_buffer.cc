#include "engines/decoder/weight_buffer.h"

#include <new>

#include "mmap/huge_pages.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace weightmap {

namespace {
#if defined(__linux__)
size_t Rounded(size_t bytes) {  // to whole pages
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}
#endif
}  // namespace

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
  if (bytes >= kHugePageBytes) {
    // The end is rounded to small pages only: a last, partial 2 MB stays in 4 KB pages rather than
    // faulting in a huge page half of padding.
    const size_t rounded = Rounded(bytes);
    if (void* p = MapAlignedAnonymous(rounded, PROT_READ | PROT_WRITE)) {
      (void)::madvise(p, rounded, MADV_HUGEPAGE);  // advice only
      data_ = p;
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
