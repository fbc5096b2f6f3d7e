// The session's KV cache and causal grouped-query attention of a batch of queries against it, as
// two gemms per (kv head, tile of tokens), the query heads that share the kv head stacked so every
// key and value is read once per tile: S = Q·Kᵀ, row-wise softmax up to each token's own
// position, O = P·V. A sliding layer (DecoderConfig::Sliding) sees only the last sliding_window
// positions: the tile's products start at the first key its first token sees.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "engines/decoder/decoder.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"

namespace weightmap {
namespace decoder {

void DecoderSession::StoreKv(int64_t layer, int64_t g, int64_t pos, const float* k, const float* v) {
  const int64_t hd = cfg_.head_dim;
  const kernels::KernelTable& t = kernels::Active();
  switch (kv_) {
    case KvType::F32:
      std::memcpy(Keys<float>(layer, g) + pos * hd, k, hd * sizeof(float));
      std::memcpy(Values<float>(layer, g) + pos * hd, v, hd * sizeof(float));
      break;
    case KvType::F16:
      t.f32_to_f16(k, Keys<uint16_t>(layer, g) + pos * hd, hd);
      t.f32_to_f16(v, Values<uint16_t>(layer, g) + pos * hd, hd);
      break;
    case KvType::Q8_0: {
      const int64_t group = KvGroup(), scales = hd / group;
      t.quantize_q8(k, hd, int(group), Keys<int8_t>(layer, g) + pos * hd, KeyScales(layer, g) + pos * scales);
      t.quantize_q8(v, hd, int(group), Values<int8_t>(layer, g) + pos * hd, ValueScales(layer, g) + pos * scales);
      break;
    }
  }
}

void DecoderSession::Attention(int64_t layer, int64_t pos0, int64_t n, const float* q, float* att, bool parallel,
                               bool bidirectional) {
  const DecoderConfig& c = cfg_;
  const kernels::KernelTable& k = kernels::Active();
  ThreadPool& pool = model_->pool();
  const int64_t hd = c.head_dim;
  const int64_t group = c.n_heads / c.n_kv_heads;  // query heads per kv head
  const int64_t rows_max = group * kAttnTile;      // stacked query rows per work item
  const float scale = c.ScoreScale();
  const int64_t window = c.Sliding(model_->first_layer() + layer) ? c.sliding_window : 0;  // 0: every earlier key
  // Bidirectional: every key of the pass [0, pos0 + n), a sliding layer's within `half` either side.
  const bool causal = !c.bidirectional;
  const int64_t half = window / 2, last = pos0 + n;  // keys [.., last)
  const float* sinks = c.attn_sinks ? model_->layer(model_->first_layer() + layer).sinks.data() : nullptr;  // [n_heads]
  const int64_t tiles = (n + kAttnTile - 1) / kAttnTile;
  const int64_t items = tiles * c.n_kv_heads;
  // At most this many multiply-adds (QK and PV of every query head, each token seeing all keys up
  // to its own): a short one runs inline like a small matvec (kernels::kMinParallelRowWork). A
  // batched step runs its rows' attention side by side instead (parallel = false).
  const int64_t macs = 2 * c.n_heads * n * (pos0 + n) * hd;
  const int64_t slots = !parallel || macs < kernels::kMinParallelRowWork ? 1 : std::min<int64_t>(pool.size(), items);
  const int64_t kv_group = KvGroup(), kv_scales = hd / kv_group;  // q8_0

  // Per slot, in floats: queries A [rows, hd], output O [rows, hd], scores S [rows, context]
  // (compacted in place into the probabilities P [rows, keys]).
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
      const int64_t rows = group * m;  // row r: query head g·group + r / m, token t0 + r % m
      // The tile reads the keys at positions [k0, k1): k1 - 1 is the last token's own position (the
      // pass's last with `bidirectional`, or a bidirectional model's), k0 the first key its first
      // token sees (0, or the start of a sliding layer's window).
      const int64_t k1 = !causal ? (window > 0 ? std::min(last, pos0 + t1 + half) : last) : bidirectional ? last : pos0 + t1;
      const int64_t k0 = window > 0 ? std::max<int64_t>(0, pos0 + t0 - (causal ? window - 1 : half)) : 0;
      const int64_t keys = k1 - k0;

      for (int64_t r = 0; r < rows; r++) {
        const int64_t h = g * group + r / m, t = t0 + r % m;
        std::memcpy(a + r * hd, q + t * c.q_dim() + h * hd, hd * sizeof(float));
      }
      // S [rows, context], columns [k0, k1) = A · K[k0, k1)ᵀ
      switch (kv_) {
        case KvType::F32: k.sgemm_trans(a, Keys<float>(layer, g), s, rows, hd, context_, k0, k1); break;
        case KvType::F16: k.hgemm_trans(a, Keys<uint16_t>(layer, g), s, rows, hd, context_, k0, k1); break;
        case KvType::Q8_0:
          k.q8_gemm_trans(a, Keys<int8_t>(layer, g), KeyScales(layer, g), kv_group, s, rows, hd, context_, k0, k1);
          break;
      }
      for (int64_t r = 0; r < rows; r++) {
        float* row = s + r * context_;  // column j: the key at position j
        float* p = s + r * keys;        // r·keys <= r·context + k0: compacting forward never overwrites a later row
        const int64_t own = pos0 + t0 + r % m;
        // [first, end): up to the own position, or the whole pass (a bidirectional model, or
        // `bidirectional` rows); a sliding layer's window of it: a bidirectional model's `half`
        // either side, else counted back from the own position (llama.cpp's is_masked_swa).
        const int64_t end = !causal ? (window > 0 ? std::min(last, own + half + 1) : last) : bidirectional ? last : own + 1;
        const int64_t first = window > 0 ? std::max<int64_t>(0, causal ? own + 1 - window : own - half) : 0;  // >= k0
        for (int64_t j = first; j < end; j++) row[j] *= scale;
        if (sinks) {
          // gpt-oss: the head's sink logit joins the denominator (ggml_soft_max_ext with sinks).
          const float sink = sinks[g * group + r / m];
          float top = sink;
          for (int64_t j = first; j < end; j++) top = std::max(top, row[j]);
          float sum = 0;
          for (int64_t j = first; j < end; j++) sum += row[j] = std::exp(row[j] - top);
          sum += std::exp(sink - top);
          const float inv = 1.0f / sum;
          for (int64_t j = first; j < end; j++) row[j] *= inv;
        } else {
          kernels::softmax(row + first, end - first);
        }
        std::memmove(p + (first - k0), row + first, (end - first) * sizeof(float));
        std::memset(p, 0, (first - k0) * sizeof(float));
        std::memset(p + (end - k0), 0, (k1 - end) * sizeof(float));
      }
      // O [rows, hd] = P [rows, keys] · V [k0, k1)
      switch (kv_) {
        case KvType::F32: k.sgemm(s, Values<float>(layer, g) + k0 * hd, o, rows, keys, hd, 0, hd); break;
        case KvType::F16: k.hgemm(s, Values<uint16_t>(layer, g) + k0 * hd, o, rows, keys, hd, 0, hd); break;
        case KvType::Q8_0:
          k.q8_gemm(s, Values<int8_t>(layer, g) + k0 * hd, ValueScales(layer, g) + k0 * kv_scales, kv_group, o, rows, keys,
                    hd, 0, hd);
          break;
      }
      for (int64_t r = 0; r < rows; r++) {
        const int64_t h = g * group + r / m, t = t0 + r % m;
        std::memcpy(att + t * c.q_dim() + h * hd, o + r * hd, hd * sizeof(float));
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
