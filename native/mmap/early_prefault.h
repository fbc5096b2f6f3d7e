// The weights of a GGUF mapped into the process (mapping.h Prefault) as soon as the file is
// mapped (an ajc1's as soon as its fixed layout is read), on a thread of its own, while the JS
// reader parses the header (or an ajc1's vocabulary): a fresh process spends ~10 ms there with
// one core idle, and mapping 640 MB of small page-cache folios takes ~20-35 ms of CPU. The same
// tensors as the decoder's own prefault at load (decoder/model.cc), with the same
// huge-page advice (in_place_pages.h): every tensor but bf16 ones (converted to a copy) and an
// untied token embedding (token_embd.weight beside an output.weight: read a row at a time, so only
// the rows used are mapped) nor stacked MoE experts (ffn_*_exps: only the routed experts are read).
// The decoder's prefault then finds these pages mapped.
#pragma once

#include <cstdint>
#include <vector>

#include "mmap/huge_pages.h"
#include "mmap/mapping.h"

namespace weightmap {

// The `streamed` spans of `mapping` under huge-page advice (none over a block holding `partial`
// bytes) prefaulted last to first, skipping what an earlier prefault claimed; returns the bytes
// this call prefaulted (whole 64 KB units).
uint64_t PrefaultStreamed(const Mapping& mapping, const std::vector<ByteSpan>& streamed, const std::vector<ByteSpan>& partial);

// Bytes this call prefaulted (whole 64 KB units, prefault_claims.h; none that an earlier prefault
// of the mapping claimed); 0 where `mapping` is not a GGUF this can read.
uint64_t PrefaultGgufWeights(const Mapping& mapping);

}  // namespace weightmap
