// Anonymous memory that a decode step reads whole (the KV cache): on 2 MB pages where transparent
// huge pages allow it (THP `madvise` or `always`), else plain heap memory. Attention streams every
// cached key and value of a layer per token; through 4 KB pages each 4 KB is a TLB miss and a
// restart of the hardware prefetchers (see huge_pages.h for the weights). Not zeroed: pages are
// committed as they are first written.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weightmap {

class HugeBuffer {
 public:
  HugeBuffer() = default;
  explicit HugeBuffer(size_t bytes);
  ~HugeBuffer();
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  HugeBuffer(HugeBuffer&& other) noexcept;
  HugeBuffer& operator=(HugeBuffer&& other) noexcept;

  uint8_t* get() const { return data_; }

 private:
  void Free();
  uint8_t* data_ = nullptr;
  size_t mapped_ = 0;  // bytes mapped (MapAlignedAnonymous), 0: data_ from new[]
};

}  // namespace weightmap
