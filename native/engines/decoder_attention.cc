// Causal grouped-query attention of a batch of queries against the session's KV cache, as two
// gemms per (kv head, tile of tokens), the query heads that share the kv head stacked so every
// key and value is read once per tile: S = Q·Kᵀ, row-wise softmax up to each token's own
// position, O = P·V. A sliding layer (DecoderConfig::Sliding) sees only the last sliding_window
// positions: the tile's products start at the first key its first token sees.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "engines/decoder.h"
#include "kernels/kernels.h"

namespace weightmap {
namespace decoder {

void DecoderSession::Attention(int64_t layer, int64_t pos0, int64_t n) {
  const DecoderConfig& c = cfg_;
  const kernels::KernelTable& k = kernels::Active();
  ThreadPool& pool = model_->pool();
  const int64_t hd = c.head_dim;
  const int64_t group = c.n_heads / c.n_kv_heads;  // query heads per kv head
  const int64_t rows_max = group * kAttnTile;      // stacked query rows per work item
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.attn_scalar > 0 ? c.attn_scalar : hd));
  const int64_t window = c.Sliding(model_->first_layer() + layer) ? c.sliding_window : 0;  // 0: every earlier key
  const int64_t tiles = (n + kAttnTile - 1) / kAttnTile;
  const int64_t items = tiles * c.n_kv_heads;
  const int64_t slots = std::min<int64_t>(pool.size(), items);

  // Per slot: queries A [rows, hd], output O [rows, hd], scores S [rows, context] (compacted in
  // place into the probabilities P [rows, keys]).
  const size_t scratch = static_cast<size_t>(rows_max * (2 * hd + context_));
  if (static_cast<int64_t>(attn_scratch_.size()) < slots) attn_scratch_.resize(slots);
  for (int64_t s = 0; s < slots; s++)
    if (attn_scratch_[s].size() < scratch) attn_scratch_[s].resize(scratch);

  // Work items, the longest first (the last tile of tokens sees the most keys); each slot takes
  // the next one until none are left, which balances the causal triangle.
  std::atomic<int64_t> next{0};
  auto work = [&](int64_t slot) {
    float* a = attn_scratch_[slot].data();  // [rows, hd]
    float* o = a + rows_max * hd;           // [rows, hd]
    float* s = o + rows_max * hd;           // [rows, context], then [rows, keys]
    for (int64_t item; (item = next.fetch_add(1)) < items;) {
      const int64_t tile = tiles - 1 - item / c.n_kv_heads;
      const int64_t g = item % c.n_kv_heads;
      const int64_t t0 = tile * kAttnTile, t1 = std::min(n, t0 + kAttnTile), m = t1 - t0;
      const int64_t rows = group * m;   // row r: query head g·group + r / m, token t0 + r % m
      const int64_t keys = pos0 + t1;   // positions the last token of the tile sees
      // The first key any token of the tile sees; P [rows, span] covers keys [k0, keys).
      const int64_t k0 = window > 0 ? std::max<int64_t>(0, pos0 + t0 - window + 1) : 0;
      const int64_t span = keys - k0;
      const bool half = kv_ == KvType::F16;

      for (int64_t r = 0; r < rows; r++) {
        const int64_t h = g * group + r / m, t = t0 + r % m;
        std::memcpy(a + r * hd, q_.data() + t * c.q_dim() + h * hd, hd * sizeof(float));
      }
      // S [rows, context], columns [k0, keys) = A · Kᵀ [hd, context]
      if (half) k.hgemm(a, KeysT<uint16_t>(layer, g), s, rows, hd, context_, k0, keys);
      else k.sgemm(a, KeysT<float>(layer, g), s, rows, hd, context_, k0, keys);
      for (int64_t r = 0; r < rows; r++) {
        float* row = s + r * context_;
        float* p = s + r * span;  // r·span <= r·context: compacting forward never overwrites a later row
        const int64_t end = pos0 + t0 + r % m + 1;  // keys [first, end): up to the own position
        const int64_t first = window > 0 ? std::max<int64_t>(0, end - window) : 0;
        for (int64_t j = first; j < end; j++) row[j] *= scale;
        kernels::softmax(row + first, end - first);
        std::memmove(p + (first - k0), row + first, (end - first) * sizeof(float));
        std::memset(p, 0, (first - k0) * sizeof(float));
        std::memset(p + (end - k0), 0, (keys - end) * sizeof(float));
      }
      // O [rows, hd] = P [rows, span] · V [k0..keys, hd]
      if (half) k.hgemm(s, Values<uint16_t>(layer, g) + k0 * hd, o, rows, span, hd, 0, hd);
      else k.sgemm(s, Values<float>(layer, g) + k0 * hd, o, rows, span, hd, 0, hd);
      for (int64_t r = 0; r < rows; r++) {
        const int64_t h = g * group + r / m, t = t0 + r % m;
        std::memcpy(att_.data() + t * c.q_dim() + h * hd, o + r * hd, hd * sizeof(float));
      }
    }
  };
  if (slots == 1) {
    work(0);
  } else {
    pool.ParallelFor(slots, 1, [&](int64_t b, int64_t e) {
      for (int64_t slot = b; slot < e; slot++) work(slot);
    });
  }
}

}  // namespace decoder
}  // namespace weightmap
