#include "mmap/early_prefault.h"

#include <algorithm>
#include <vector>

#include "mmap/gguf_layout.h"
#include "mmap/huge_pages.h"

namespace weightmap {

uint64_t PrefaultStreamed(const Mapping& mapping, const std::vector<ByteSpan>& streamed, const std::vector<ByteSpan>& partial) {
  const bool huge = AdviseHugePages(mapping, streamed, partial) > 0;
  // Last to first: the decoder's own prefault, if it starts before this ends, goes first to last
  // and takes the pieces this has not claimed yet.
  constexpr uint64_t kPiece = uint64_t(8) << 20;
  uint64_t total = 0;
  for (auto s = streamed.rbegin(); s != streamed.rend(); ++s) {
    if (s->first >= s->second || s->second > mapping.size()) continue;
    for (uint64_t left = s->second - s->first; left > 0;) {
      const uint64_t piece = left % kPiece == 0 ? kPiece : left % kPiece;
      left -= piece;
      total += mapping.PrefaultOnce(s->first + left, piece, huge);
    }
  }
  return total;
}

uint64_t PrefaultGgufWeights(const Mapping& mapping) {
  std::vector<GgufTensorSpan> spans;
  if (!ReadGgufTensorSpans(mapping.data(), mapping.size(), &spans)) return 0;
  const bool untied = std::any_of(spans.begin(), spans.end(), [](const auto& t) { return t.name == "output.weight"; });
  std::vector<ByteSpan> streamed, partial;
  for (const auto& t : spans) {
    if (t.type == kGgmlTypeBf16) continue;
    // Stacked experts (ffn_*_exps): a token reads only the experts routed to, as the decoder's load.
    const bool experts = t.name.size() > 12 && t.name.compare(t.name.size() - 12, 12, "_exps.weight") == 0;
    (experts || (untied && t.name == "token_embd.weight") ? partial : streamed).emplace_back(t.begin, t.end);
  }
  return PrefaultStreamed(mapping, streamed, partial);
}

}  // namespace weightmap
