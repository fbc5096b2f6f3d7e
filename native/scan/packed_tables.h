// The element checks of a packed tokenizer's tables (lib/tokenizers/packed.ts, checkPackedSteps):
// every token offset, id and table slot against what the arrays hold, so that no lookup can run
// past an array or probe forever. Run off the JS thread when the tokenizer cache is read: the same
// loops in JS take ~10 ms of a fresh process (1.3 M elements for Qwen3, interpreted at first).
#pragma once

#include <cstdint>
#include <string>

namespace weightmap {
namespace scan {

struct PackedTables {
  const uint32_t* offsets;  // entries + 1
  const int32_t* ids;       // entries
  const int32_t* by_id;     // vocabulary size
  const int32_t* index;     // index slots
  const int32_t* keys;      // 2 per merge slot
  const int32_t* ranks;     // merge slots
  const int32_t* merged;    // merge slots
  uint64_t offsets_length, ids_length, by_id_length, index_length, keys_length, ranks_length, merged_length;
};

struct PackedTablesCheck {
  std::string problem;  // empty when every element passes; else what packed.ts names
  uint64_t filled = 0;  // vocabulary index slots in use
  uint64_t used = 0;    // merge table slots in use
};

// In packed.ts's order: the entries (offsets never decrease, ids in [0, vocabulary size)), byId
// (each id names its own entry or -1), the index slots (-1 or an entry), the merge slots (-1, or two
// ids, a rank >= 0 and a merged id). Array lengths that do not fit each other are a problem too.
PackedTablesCheck CheckPackedTables(const PackedTables& t);

}  // namespace scan
}  // namespace weightmap
