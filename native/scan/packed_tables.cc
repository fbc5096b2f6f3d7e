#include "scan/packed_tables.h"

namespace weightmap {
namespace scan {

namespace {

bool InRange(int64_t v, uint64_t size) { return v >= 0 && uint64_t(v) < size; }

}  // namespace

PackedTablesCheck CheckPackedTables(const PackedTables& t) {
  PackedTablesCheck out;
  const uint64_t entries = t.ids_length;
  const uint64_t size = t.by_id_length;
  if (t.offsets_length != entries + 1) {
    out.problem = "token offsets do not cover the token bytes";
    return out;
  }
  if (t.keys_length != t.ranks_length * 2 || t.merged_length != t.ranks_length) {
    out.problem = "merge arrays differ in length";
    return out;
  }
  for (uint64_t e = 0; e < entries; e++) {
    if (t.offsets[e + 1] < t.offsets[e]) {
      out.problem = "token offsets decrease at entry " + std::to_string(e);
      return out;
    }
    if (!InRange(t.ids[e], size)) {
      out.problem = "entry " + std::to_string(e) + " has id " + std::to_string(t.ids[e]) + " outside [0, " + std::to_string(size) + ")";
      return out;
    }
  }
  for (uint64_t id = 0; id < size; id++) {
    const int32_t e = t.by_id[id];
    if (e != -1 && !(InRange(e, entries) && uint64_t(t.ids[e]) == id)) {
      out.problem = "id " + std::to_string(id) + " names entry " + std::to_string(e) + ", which is not its";
      return out;
    }
  }
  for (uint64_t slot = 0; slot < t.index_length; slot++) {
    const int32_t e = t.index[slot];
    if (e == -1) continue;
    if (!InRange(e, entries)) {
      out.problem = "vocabulary index slot " + std::to_string(slot) + " names entry " + std::to_string(e);
      return out;
    }
    out.filled++;
  }
  for (uint64_t slot = 0; slot < t.ranks_length; slot++) {
    const int32_t a = t.keys[2 * slot];
    if (a == -1) continue;
    const int32_t b = t.keys[2 * slot + 1];
    if (!(InRange(a, size) && InRange(b, size) && t.ranks[slot] >= 0 && InRange(t.merged[slot], size))) {
      out.problem = "merge table slot " + std::to_string(slot) + " is invalid";
      return out;
    }
    out.used++;
  }
  return out;
}

}  // namespace scan
}  // namespace weightmap
