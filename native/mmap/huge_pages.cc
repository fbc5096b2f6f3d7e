#include "mmap/huge_pages.h"

#include <algorithm>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace weightmap {

namespace {

enum Block : uint8_t { kUnused = 0, kStreamed = 1, kPartial = 2 };

void Mark(std::vector<uint8_t>& blocks, const ByteSpan& span, Block what) {
  if (span.second <= span.first) return;
  const uint64_t first = span.first / kHugePageBytes;
  const uint64_t last = std::min<uint64_t>((span.second - 1) / kHugePageBytes, blocks.size() - 1);
  for (uint64_t b = first; b <= last; b++) blocks[b] |= what;
}

}  // namespace

std::vector<ByteSpan> HugePageRuns(uint64_t size, const std::vector<ByteSpan>& streamed,
                                   const std::vector<ByteSpan>& partial) {
  std::vector<ByteSpan> runs;
  if (size == 0) return runs;
  std::vector<uint8_t> blocks((size + kHugePageBytes - 1) / kHugePageBytes, kUnused);
  for (const ByteSpan& s : streamed)
    if (s.first < size) Mark(blocks, {s.first, std::min(s.second, size)}, kStreamed);
  for (const ByteSpan& s : partial)
    if (s.first < size) Mark(blocks, {s.first, std::min(s.second, size)}, kPartial);
  for (uint64_t b = 0; b < blocks.size();) {
    if (blocks[b] != kStreamed) {
      b++;
      continue;
    }
    const uint64_t start = b;
    while (b < blocks.size() && blocks[b] == kStreamed) b++;
    runs.emplace_back(start * kHugePageBytes, std::min(b * kHugePageBytes, size));
  }
  return runs;
}

void* MapAlignedAnonymous(size_t bytes, int prot) {
#if defined(__linux__)
  const size_t over = bytes + kHugePageBytes;
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (prot == PROT_NONE ? MAP_NORESERVE : 0);
  void* raw = ::mmap(nullptr, over, prot, flags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~uintptr_t(kHugePageBytes - 1);
  const uintptr_t end = aligned + bytes, raw_end = start + over;
  if (aligned > start) ::munmap(raw, aligned - start);
  if (raw_end > end) ::munmap(reinterpret_cast<void*>(end), raw_end - end);
  return reinterpret_cast<void*>(aligned);
#else
  (void)bytes;
  (void)prot;
  return nullptr;
#endif
}

uint64_t AdviseHugePages(const Mapping& mapping, const std::vector<ByteSpan>& streamed,
                         const std::vector<ByteSpan>& partial) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // A PMD maps 2 MB of the file only where the virtual address and the file offset agree modulo
  // 2 MB: the mapping starts at offset 0 on a 2 MB boundary (Mapping::Open), so every whole block is
  // eligible. Without that, advice would only split the mapping's VMA for nothing.
  if (reinterpret_cast<uintptr_t>(mapping.data()) % kHugePageBytes != 0) return 0;
  uint64_t advised = 0;
  for (const ByteSpan& run : HugePageRuns(mapping.size(), streamed, partial)) {
    void* at = const_cast<uint8_t*>(mapping.data()) + run.first;
    if (::madvise(at, run.second - run.first, MADV_HUGEPAGE) != 0) continue;
    // And no read-ahead past the faulting block: a fault here reads its whole 2 MB folio anyway,
    // while the asynchronous read-ahead it would start reads the next blocks in folios sized by
    // its window and its start, often under 2 MB, which a PMD can never map (seen: 28 of 38 MB
    // mapped by PMD in some loads, 38 in others).
    (void)::madvise(at, run.second - run.first, MADV_RANDOM);
    advised += run.second - run.first;
  }
  return advised;
#else
  (void)mapping;
  (void)streamed;
  (void)partial;
  return 0;
#endif
}

}  // namespace weightmap
