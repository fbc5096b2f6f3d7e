// Causal grouped-query attention of a batch of queries against the session's KV cache, as
// matrix products per (query head, tile of tokens): S = Q·Kᵀ, softmax by row up to each token's
// own position, O = S·V.
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
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t tiles = (n + kAttnTile - 1) / kAttnTile;
  const int64_t items = tiles * c.n_heads;
  const int64_t slots = std::min<int64_t>(pool.size(), items);

  // The scratch of each slot: query tile [kAttnTile, hd], scores [kAttnTile, context],
  // output tile [kAttnTile, hd].
  const size_t scratch = static_cast<size_t>(kAttnTile * (2 * hd + context_));
  if (static_cast<int64_t>(attn_scratch_.size()) < slots) attn_scratch_.resize(slots);
  for (int64_t s = 0; s < slots; s++)
    if (attn_scratch_[s].size() < scratch) attn_scratch_[s].resize(scratch);

  // Work items, the longest first (the last tile of tokens sees the most keys); each slot
  // takes the next one until none are left, which balances the causal triangle.
  std::atomic<int64_t> next{0};
  auto work = [&](int64_t slot) {
    float* a = attn_scratch_[slot].data();  // [m, hd]
    float* o = a + kAttnTile * hd;          // [m, hd]
    float* s = o + kAttnTile * hd;          // [m, keys]
    for (int64_t item; (item = next.fetch_add(1)) < items;) {
      const int64_t tile = tiles - 1 - item / c.n_heads;
      const int64_t h = item % c.n_heads;
      const int64_t t0 = tile * kAttnTile, t1 = std::min(n, t0 + kAttnTile), m = t1 - t0;
      const int64_t keys = pos0 + t1;  // keys the last query of the tile sees
      const float* kc = KeyCache(layer, h / group);    // [keys, hd]
      const float* vc = ValueCache(layer, h / group);  // [keys, hd]

      for (int64_t i = 0; i < m; i++) std::memcpy(a + i * hd, q_.data() + (t0 + i) * c.q_dim() + h * hd, hd * sizeof(float));
      k.sgemm_trans(a, kc, s, m, hd, keys, 0, keys);  // s [m, keys] = a · kcᵀ
      for (int64_t i = 0; i < m; i++) {
        float* row = s + i * keys;
        const int64_t visible = pos0 + t0 + i + 1;  // keys 0..own position
        for (int64_t j = 0; j < visible; j++) row[j] *= scale;
        kernels::softmax(row, visible);
        std::memset(row + visible, 0, (keys - visible) * sizeof(float));
      }
      k.sgemm(s, vc, o, m, keys, hd, 0, hd);  // o [m, hd] = s · vc
      for (int64_t i = 0; i < m; i++) std::memcpy(att_.data() + (t0 + i) * c.q_dim() + h * hd, o + i * hd, hd * sizeof(float));
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
