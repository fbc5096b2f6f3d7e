#include "engines/in_place_pages.h"

#include <vector>

#include "mmap/huge_pages.h"

namespace weightmap {

uint64_t AdviseStreamedHugePages(const WeightsSpec& spec, const std::set<std::string>& partial) {
  uint64_t advised = 0;
  for (const auto& mapping : spec.mappings()) {
    const uint8_t* base = mapping->data();
    const uint64_t size = mapping->size();
    std::vector<ByteSpan> streamed, touched_in_part;
    auto span = [&](const uint8_t* p, uint64_t n, std::vector<ByteSpan>& into) {
      if (p >= base && p < base + size) into.emplace_back(uint64_t(p - base), uint64_t(p - base) + n);
    };
    for (const auto& [name, t] : spec.tensors()) {
      // bf16 is converted to a copy at load and its bytes never read again: neither kind.
      if (t.dtype == DType::BF16) continue;
      auto& into = partial.count(name) ? touched_in_part : streamed;
      span(t.data, t.byte_length, into);
      if (t.scales) span(t.scales, uint64_t(t.numel / t.group) * sizeof(float), into);
    }
    advised += AdviseHugePages(*mapping, streamed, touched_in_part);
  }
  return advised;
}

}  // namespace weightmap
