// A session's life (its KV cache, grown as positions fill; truncation) and Eval: the tokens in
// batches of at most kMaxBatch, each one span of rows through DecoderPass (prefill: the prompt,
// decode: n = 1).
#include <algorithm>
#include <cstring>
#include <string>

#include "engines/decoder/decoder.h"
#include "engines/decoder/pass.h"

namespace weightmap {
namespace decoder {

DecoderSession::DecoderSession(std::shared_ptr<const DecoderModel> model, int64_t context_length, KvType kv,
                               bool one_pass)
    : model_(std::move(model)), cfg_(model_->config()), context_(context_length), kv_(kv),
      kv_layers_(one_pass ? 1 : model_->end_layer() - model_->first_layer()) {
  if (context_ <= 0 || context_ > cfg_.max_seq_len)
    throw EngineError("ERR_OUT_OF_RANGE", "contextLength " + std::to_string(context_) + " outside [1, " +
                                              std::to_string(cfg_.max_seq_len) + "]");
}

void DecoderSession::ReserveKv(int64_t positions) {
  const int64_t old_rows = kv_rows_.load();
  if (positions <= old_rows) return;
  const int64_t rows = std::min(context_, std::max(positions, 2 * old_rows));
  const int64_t blocks = kv_layers_ * cfg_.n_kv_heads;
  const int64_t row_bytes = cfg_.head_dim * KvElementBytes();
  const int64_t scales = kv_ == KvType::Q8_0 ? cfg_.head_dim / KvGroup() : 0;  // per row
  const int64_t kept = position_.load();  // rows past it are stale: not copied
  auto grow = [&](std::unique_ptr<uint8_t[]>& cache) {
    std::unique_ptr<uint8_t[]> grown(new uint8_t[static_cast<size_t>(blocks * rows * row_bytes)]);
    for (int64_t b = 0; b < blocks && kept > 0; b++)
      std::memcpy(grown.get() + b * rows * row_bytes, cache.get() + b * old_rows * row_bytes, kept * row_bytes);
    cache = std::move(grown);
  };
  auto grow_scales = [&](std::unique_ptr<float[]>& cache) {
    std::unique_ptr<float[]> grown(new float[static_cast<size_t>(blocks * rows * scales)]);
    for (int64_t b = 0; b < blocks && kept > 0; b++)
      std::memcpy(grown.get() + b * rows * scales, cache.get() + b * old_rows * scales, kept * scales * sizeof(float));
    cache = std::move(grown);
  };
  grow(k_cache_);
  grow(v_cache_);
  if (scales > 0) {
    grow_scales(k_scales_);
    grow_scales(v_scales_);
  }
  kv_rows_.store(rows);
}

void DecoderSession::Truncate(int64_t n) {
  if (n < 0 || n > position_) throw EngineError("ERR_OUT_OF_RANGE", "truncate(" + std::to_string(n) + ") outside [0, " +
                                                                        std::to_string(position()) + "]");
  position_ = n;
  if (model_->embeds()) tokens_.resize(n);
}

void DecoderSession::EnsureScratch(int64_t n) { acts_.Reserve(cfg_, n); }

void DecoderSession::Eval(const int32_t* ids, int64_t n, bool all_logits, float* logits, const std::atomic<bool>& abort,
                          bool steps) {
  if (!model_->embeds())
    throw EngineError("ERR_OUT_OF_RANGE", "this model starts at layer " + std::to_string(model_->first_layer()) +
                                              ": it takes hidden states, not token ids");
  Run(ids, nullptr, n, all_logits, logits, abort, nullptr, false, steps);
}

void DecoderSession::EvalHidden(const float* hidden, int64_t n, bool all_logits, float* out,
                                const std::atomic<bool>& abort) {
  if (model_->embeds()) throw EngineError("ERR_OUT_OF_RANGE", "this model starts at layer 0: it takes token ids");
  Run(nullptr, hidden, n, all_logits, out, abort);
}

void DecoderSession::EvalRows(const float* rows, const int32_t* ids, int64_t n, bool bidirectional, bool all_logits,
                              float* out, const std::atomic<bool>& abort) {
  if (!model_->embeds()) {
    if (bidirectional) throw EngineError("ERR_OUT_OF_RANGE", "a pipeline stage past layer 0 has no bidirectional rows");
    Run(nullptr, rows, n, all_logits, out, abort);
    return;
  }
  if (bidirectional && n > kMaxBatch)
    throw EngineError("ERR_OUT_OF_RANGE", "bidirectional rows are one batch of at most " + std::to_string(kMaxBatch) +
                                              ", got " + std::to_string(n));
  Run(nullptr, rows, n, all_logits, out, abort, ids, bidirectional);
}

void DecoderSession::Run(const int32_t* ids, const float* hidden, int64_t n, bool all_logits, float* out,
                         const std::atomic<bool>& abort, const int32_t* names, bool bidirectional, bool steps) {
  if (n <= 0) throw EngineError("ERR_OUT_OF_RANGE", "eval needs at least one token");
  if (cfg_.bidirectional)
    throw EngineError("ERR_OUT_OF_RANGE", "a bidirectional model (an embedding model) runs only pooled, not token by token");
  const int64_t start = position_.load();
  if (n > context_ - start)
    throw EngineError("ERR_OUT_OF_RANGE", "the session holds " + std::to_string(start) + " of " +
                                              std::to_string(context_) + " positions; " + std::to_string(n) +
                                              " more do not fit");
  for (int64_t i = 0; ids && i < n; i++)
    if (ids[i] < 0 || ids[i] >= cfg_.vocab)
      throw EngineError("ERR_OUT_OF_RANGE", "token id " + std::to_string(ids[i]) + " at index " + std::to_string(i) +
                                                " is outside the vocabulary [0, " + std::to_string(cfg_.vocab) + ")");
  ReserveKv(start + n);
  // Without a head every position's hidden state is the output.
  const bool all = all_logits || !model_->has_head();
  const int64_t width = model_->has_head() ? cfg_.vocab : cfg_.dim;
  for (int64_t done = 0; done < n;) {
    const int64_t batch = std::min(kMaxBatch, n - done);
    const bool last = done + batch == n;
    const int32_t* batch_ids = ids ? ids + done : nullptr;
    const float* batch_hidden = hidden ? hidden + done * cfg_.dim : nullptr;
    if (all)
      Forward(batch_ids, batch_hidden, batch, start + done, batch, out + done * width, abort, bidirectional, steps);
    else
      Forward(batch_ids, batch_hidden, batch, start + done, last ? 1 : 0, out, abort, bidirectional);
    done += batch;
  }
  if (ids) tokens_.insert(tokens_.end(), ids, ids + n);
  else if (model_->embeds() && names) tokens_.insert(tokens_.end(), names, names + n);
  else if (model_->embeds()) tokens_.insert(tokens_.end(), n, -1);
  position_.store(start + n);
}

void DecoderSession::Forward(const int32_t* ids, const float* states, int64_t n, int64_t pos0, int64_t logits_rows,
                             float* logits, const std::atomic<bool>& abort, bool bidirectional, bool steps) {
  EnsureScratch(n);
  // rows [0, n): this session's positions [pos0, pos0 + n)
  const Span span{this, 0, n, pos0, &abort, bidirectional, steps};
  DecoderPass pass(*model_, &span, 1, acts_);
  if (ids) pass.Embed(ids);
  else pass.Input(states);
  pass.Layers();
  if (logits_rows > 0) pass.Output(logits_rows, logits);
}

}  // namespace decoder
}  // namespace weightmap
