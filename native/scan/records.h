// Walks of length-prefixed records, the loops the format readers run over a vocabulary before they
// trust it (151k GGUF token strings and as many merges, an ajc1 `.tokenizer`'s 151k entries): in
// JS such a walk runs interpreted until V8 compiles it, ~10 ms of a fresh process's first load.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weightmap {
namespace scan {

// A record: `header` bytes holding a little-endian length of `length_bytes` (4, or 8 with the high
// half required to be 0) at `length_offset`, then that many payload bytes.
struct RecordLayout {
  uint32_t header;
  uint32_t length_offset;
  uint32_t length_bytes;
};

struct RecordWalk {
  uint64_t at;        // where the walk stopped: after the last record that fits
  uint64_t count;     // records walked
  uint64_t longest;   // the longest payload among them
};

// Steps over up to `count` records from `at` that lie whole in bytes[0, end); stops early at the
// first that does not (its header past `end`, a length past `end`, or a nonzero high half).
RecordWalk SkipRecords(const uint8_t* bytes, uint64_t end, uint64_t at, uint64_t count, RecordLayout layout);

}  // namespace scan
}  // namespace weightmap
