// Transparent huge pages for weights read in place from a file mapping (Linux, THP `madvise` or
// `always`). A range advised MADV_HUGEPAGE that is read from disk through the mapping lands in the
// page cache as 2 MB folios, which the fault maps by one PMD each: decode streams every matrix once
// per token, and with 4 KB entries the TLB misses, not the memory, set the pace (Qwen3-0.6B Q8_0 at
// 2 threads: 56 tok/s through small pages, 76 through 2 MB ones).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "mmap/mapping.h"

namespace weightmap {

constexpr uint64_t kHugePageBytes = uint64_t(2) << 20;

// `bytes` (a whole number of small pages) of anonymous memory with protection `prot`, starting on a
// 2 MB boundary (a huge page, or a PMD over a file, needs an aligned virtual range): mapped 2 MB
// larger, then trimmed at both ends. PROT_NONE makes a reservation to map a file over with
// MAP_FIXED. nullptr off Linux or when the kernel refuses; free with munmap(p, bytes).
void* MapAlignedAnonymous(size_t bytes, int prot);

// [begin, end) byte offsets into one mapping.
using ByteSpan = std::pair<uint64_t, uint64_t>;

// The runs of whole 2 MB blocks of a `size`-byte mapping to advise: a block goes in when it holds
// bytes of a `streamed` span (read whole on every pass) and none of a `partial` one (read a piece at
// a time: a huge page there would make a row lookup fault in 2 MB). A block's other bytes (a header,
// padding, a norm) cost at most one 2 MB block at each end of a run. Runs end at `size` at most.
std::vector<ByteSpan> HugePageRuns(uint64_t size, const std::vector<ByteSpan>& streamed,
                                   const std::vector<ByteSpan>& partial);

// madvise(MADV_HUGEPAGE) over HugePageRuns of `mapping`; returns the bytes advised (0 off Linux or
// where the kernel refuses). Only ranges not yet in the page cache gain: a file already cached in
// small folios stays in them until the cache is dropped (README, Performance).
uint64_t AdviseHugePages(const Mapping& mapping, const std::vector<ByteSpan>& streamed,
                         const std::vector<ByteSpan>& partial);

}  // namespace weightmap
