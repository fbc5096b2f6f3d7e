// PooledPass: the checks, one one-pass session per sequence, their spans through DecoderPass, and
// the pooling of the final hidden states.
#include "engines/decoder/pooled.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engines/decoder/pass.h"

namespace weightmap {
namespace decoder {

namespace {

void Check(const DecoderModel& model, const int32_t* ids, const int32_t* lengths, int64_t n_seq) {
  const DecoderConfig& c = model.config();
  if (!model.embeds() || !model.has_head())
    throw EngineError("ERR_OUT_OF_RANGE", "pooled hidden states need the whole model (not a pipeline stage)");
  if (n_seq <= 0) throw EngineError("ERR_OUT_OF_RANGE", "pooling needs at least one sequence");
  int64_t total = 0;
  for (int64_t i = 0; i < n_seq; i++) {
    if (lengths[i] < 1 || lengths[i] > c.max_seq_len)
      throw EngineError("ERR_OUT_OF_RANGE", "sequence " + std::to_string(i) + " has " + std::to_string(lengths[i]) +
                                                " tokens; the model takes 1 to " + std::to_string(c.max_seq_len));
    total += lengths[i];
    if (total > PooledPass::kMaxTokens)
      throw EngineError("ERR_OUT_OF_RANGE", "more than " + std::to_string(PooledPass::kMaxTokens) + " tokens in one call");
  }
  for (int64_t t = 0; t < total; t++)
    if (ids[t] < 0 || ids[t] >= c.vocab)
      throw EngineError("ERR_OUT_OF_RANGE", "token id " + std::to_string(ids[t]) + " at index " + std::to_string(t) +
                                                " is outside the vocabulary [0, " + std::to_string(c.vocab) + ")");
}

}  // namespace

void PooledPass::Run(const std::shared_ptr<const DecoderModel>& held, const int32_t* ids, const int32_t* lengths, int64_t n_seq,
                     Pooling pooling, float* out, const std::atomic<bool>& abort) {
  const DecoderModel& model = *held;
  Check(model, ids, lengths, n_seq);
  const DecoderConfig& c = model.config();
  std::vector<std::unique_ptr<DecoderSession>> sessions(n_seq);
  std::vector<Span> spans(n_seq);
  int64_t rows = 0;
  for (int64_t i = 0; i < n_seq; i++) {
    sessions[i] = std::make_unique<DecoderSession>(held, lengths[i], model.default_kv(), /*one_pass=*/true);
    sessions[i]->ReserveKv(lengths[i]);
    spans[i] = {sessions[i].get(), rows, lengths[i], 0, &abort};
    rows += lengths[i];
  }
  Activations activations;
  activations.Reserve(c, rows);
  DecoderPass pass(model, spans.data(), n_seq, activations);
  pass.Embed(ids);
  pass.Layers();
  const int64_t dim = c.dim;
  if (pooling == Pooling::Last) {
    std::vector<int64_t> last(n_seq);
    for (int64_t i = 0; i < n_seq; i++) last[i] = spans[i].row0 + spans[i].n - 1;
    pass.Hidden(last.data(), n_seq, out);
    return;
  }
  // Mean: every row's final hidden state, averaged per sequence.
  std::vector<int64_t> all(rows);
  for (int64_t r = 0; r < rows; r++) all[r] = r;
  std::vector<float> hidden(rows * dim);
  pass.Hidden(all.data(), rows, hidden.data());
  for (int64_t i = 0; i < n_seq; i++) {
    float* v = out + i * dim;
    std::fill(v, v + dim, 0.0f);
    for (int64_t t = 0; t < spans[i].n; t++) {
      const float* h = hidden.data() + (spans[i].row0 + t) * dim;
      for (int64_t d = 0; d < dim; d++) v[d] += h[d];
    }
    const float inv = 1.0f / static_cast<float>(spans[i].n);
    for (int64_t d = 0; d < dim; d++) v[d] *= inv;
  }
}

}  // namespace decoder
}  // namespace weightmap
