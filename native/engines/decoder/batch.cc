// BatchStep: the checks of a batched step, its rows through DecoderPass (one span per session),
// and the commit of every row not aborted.
#include "engines/decoder/batch.h"

#include <set>
#include <string>

#include "engines/decoder/pass.h"

namespace weightmap {
namespace decoder {

namespace {

void Check(DecoderSession* const* sessions, const int32_t* ids, int64_t n) {
  if (n <= 0) throw EngineError("ERR_OUT_OF_RANGE", "a batched step needs at least one session");
  const DecoderModel* model = sessions[0]->model().get();
  if (!model->embeds() || !model->has_head())
    throw EngineError("ERR_OUT_OF_RANGE", "a batched step needs the whole model (a pipeline stage steps alone)");
  if (model->config().bidirectional)
    throw EngineError("ERR_OUT_OF_RANGE", "a bidirectional model (an embedding model) runs only pooled, not token by token");
  std::set<const DecoderSession*> seen;
  for (int64_t i = 0; i < n; i++) {
    const DecoderSession& s = *sessions[i];
    const std::string row = "row " + std::to_string(i);
    if (s.model().get() != model) throw EngineError("ERR_OUT_OF_RANGE", row + ": the sessions belong to different models");
    if (!seen.insert(&s).second) throw EngineError("ERR_OUT_OF_RANGE", row + ": a session appears twice in one step");
    if (s.position() >= s.context_length())
      throw EngineError("ERR_OUT_OF_RANGE", row + ": the session holds " + std::to_string(s.position()) + " of " +
                                                std::to_string(s.context_length()) + " positions; 1 more does not fit");
    if (ids[i] < 0 || ids[i] >= model->config().vocab)
      throw EngineError("ERR_OUT_OF_RANGE", row + ": token id " + std::to_string(ids[i]) +
                                                " is outside the vocabulary [0, " + std::to_string(model->config().vocab) + ")");
  }
}

}  // namespace

std::vector<bool> BatchStep::Run(DecoderSession* const* sessions, const int32_t* ids, int64_t n,
                                 const std::atomic<bool>* const* aborts, float* logits) {
  Check(sessions, ids, n);
  const DecoderModel& M = *sessions[0]->model_;

  std::vector<int64_t> pos(n);  // the position row i is fed at
  for (int64_t i = 0; i < n; i++) {
    pos[i] = sessions[i]->position();
    sessions[i]->ReserveKv(pos[i] + 1);
  }
  std::vector<Span> spans(n);  // row i: one token of session i
  for (int64_t i = 0; i < n; i++) spans[i] = {sessions[i], i, 1, pos[i], aborts[i]};
  Activations activations;
  activations.Reserve(M.config(), n);
  DecoderPass pass(M, spans.data(), n, activations);
  pass.Embed(ids);
  pass.Layers();
  pass.Output(n, logits);  // [n, vocab]

  std::vector<bool> committed(n);
  for (int64_t i = 0; i < n; i++) {
    if (aborts[i]->load()) continue;
    DecoderSession& s = *sessions[i];
    s.tokens_.push_back(ids[i]);
    s.position_.store(pos[i] + 1);
    committed[i] = true;
  }
  return committed;
}

}  // namespace decoder
}  // namespace weightmap
