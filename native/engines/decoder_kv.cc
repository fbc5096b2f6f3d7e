// The growth of a session's KV cache (decoder.h, kv_capacity_).
#include <algorithm>
#include <cstring>
#include <memory>

#include "engines/decoder.h"

namespace weightmap {
namespace decoder {

namespace {

// Positions per kv head of a new session's cache (or all of its context, when shorter).
constexpr int64_t kMinKvPositions = 256;

}  // namespace

void DecoderSession::EnsureKv(int64_t positions, int64_t filled) {
  if (positions <= kv_capacity_) return;
  const int64_t capacity = std::min(context_, std::max({positions, 2 * kv_capacity_, kMinKvPositions}));
  const int64_t slabs = (model_->end_layer() - model_->first_layer()) * cfg_.n_kv_heads;
  const int64_t element_bytes = kv_ == KvType::F32 ? 4 : kv_ == KvType::F16 ? 2 : 1;
  const int64_t row = cfg_.head_dim * element_bytes;         // bytes of one position's keys (or values)
  const int64_t scales = cfg_.head_dim / KvGroup();          // q8_0: floats of scales per position
  const int64_t keep = std::min(filled, kv_capacity_);
  HugeBuffer k(static_cast<size_t>(slabs * capacity * row)), v(static_cast<size_t>(slabs * capacity * row));
  std::unique_ptr<float[]> ks, vs;
  if (kv_ == KvType::Q8_0) {
    ks.reset(new float[slabs * capacity * scales]);
    vs.reset(new float[slabs * capacity * scales]);
  }
  // Slab i (layer · n_kv_heads + kv head) starts at i · capacity rows.
  for (int64_t i = 0; i < slabs && keep > 0; i++) {
    std::memcpy(k.get() + i * capacity * row, k_cache_.get() + i * kv_capacity_ * row, keep * row);
    std::memcpy(v.get() + i * capacity * row, v_cache_.get() + i * kv_capacity_ * row, keep * row);
    if (kv_ == KvType::Q8_0) {
      std::memcpy(ks.get() + i * capacity * scales, k_scales_.get() + i * kv_capacity_ * scales, keep * scales * sizeof(float));
      std::memcpy(vs.get() + i * capacity * scales, v_scales_.get() + i * kv_capacity_ * scales, keep * scales * sizeof(float));
    }
  }
  k_cache_ = std::move(k);
  v_cache_ = std::move(v);
  k_scales_ = std::move(ks);
  v_scales_ = std::move(vs);
  kv_capacity_ = capacity;
}

}  // namespace decoder
}  // namespace weightmap
