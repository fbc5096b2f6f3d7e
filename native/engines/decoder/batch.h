// One decode step of several sessions of one model together (continuous batching): every session
// feeds one token at its own position; the linear layers run over the n rows block of weight rows
// by block (RunLinearRows), so each weight row is read from memory once per step for all of them;
// attention runs per row against that row's own KV cache. A committed row leaves its session
// bitwise as DecoderSession::Eval of that one token would.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "engines/decoder/decoder.h"

namespace weightmap {
namespace decoder {

class BatchStep {
 public:
  // sessions[n]: distinct sessions of one model (with its embedding and head); ids[n]: the token
  // each feeds at its position(); aborts[n]: their abort flags. Writes logits [n, vocab].
  // Returns, per row, whether it was committed: a row whose abort flag is set by the end of the
  // step is not (its session keeps its position). Throws EngineError for bad input (nothing
  // changes) and ABORT_ERR when every row is aborted.
  static std::vector<bool> Run(DecoderSession* const* sessions, const int32_t* ids, int64_t n,
                               const std::atomic<bool>* const* aborts, float* logits);
};

}  // namespace decoder
}  // namespace weightmap
