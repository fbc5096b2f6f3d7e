#include "mmap/huge_buffer.h"

#include <utility>

#include "mmap/huge_pages.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace weightmap {

HugeBuffer::HugeBuffer(size_t bytes) {
  if (bytes == 0) return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Below one huge page the heap serves as well.
  if (bytes >= kHugePageBytes) {
    const size_t whole = (bytes + 4095) & ~size_t(4095);
    if (void* p = MapAlignedAnonymous(whole, PROT_READ | PROT_WRITE)) {
      (void)::madvise(p, whole, MADV_HUGEPAGE);
      data_ = static_cast<uint8_t*>(p);
      mapped_ = whole;
      return;
    }
  }
#endif
  data_ = new uint8_t[bytes];
}

HugeBuffer::~HugeBuffer() { Free(); }

HugeBuffer::HugeBuffer(HugeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), mapped_(std::exchange(other.mapped_, 0)) {}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& other) noexcept {
  if (this != &other) {
    Free();
    data_ = std::exchange(other.data_, nullptr);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

void HugeBuffer::Free() {
#if defined(__linux__)
  if (mapped_ > 0) {
    ::munmap(data_, mapped_);
    data_ = nullptr;
    mapped_ = 0;
    return;
  }
#endif
  delete[] data_;
  data_ = nullptr;
}

}  // namespace weightmap
