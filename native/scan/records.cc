#include "scan/records.h"

#include <cstring>

namespace weightmap {
namespace scan {

namespace {

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // little-endian hosts only (the addon builds for x86-64 and arm64)
  return v;
}

}  // namespace

RecordWalk SkipRecords(const uint8_t* bytes, uint64_t end, uint64_t at, uint64_t count, RecordLayout layout) {
  RecordWalk walk{at, 0, 0};
  for (; walk.count < count; walk.count++) {
    if (walk.at > end || end - walk.at < layout.header) break;
    const uint8_t* field = bytes + walk.at + layout.length_offset;
    const uint64_t length = LoadU32(field);
    if (layout.length_bytes == 8 && LoadU32(field + 4) != 0) break;
    if (length > end - walk.at - layout.header) break;
    if (length > walk.longest) walk.longest = length;
    walk.at += layout.header + length;
  }
  return walk;
}

}  // namespace scan
}  // namespace weightmap
