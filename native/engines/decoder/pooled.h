// The embedding models' output mode of the decoder (Qwen3-Embedding, Qwen3-Reranker): several
// sequences, each from position 0 in a one-pass KV cache of its own (one layer's keys and values,
// reused by every layer), packed as the spans of one DecoderPass (the linear layers as one batch
// over all their rows), and the final hidden state (after the final norm) of each pooled: its last
// token's, or the mean of its tokens'. No head, no sampler.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "engines/decoder/decoder.h"

namespace weightmap {
namespace decoder {

enum class Pooling { Last, Mean };

class PooledPass {
 public:
  // Most tokens in one call (its activations are allocated for all of them at once).
  static constexpr int64_t kMaxTokens = 65536;

  // out [n_seq, dim]: the pooled final hidden states of the packed sequences ids [Σ lengths]
  // (sequence i: lengths[i] ids). The model must be whole (embedding and final norm). Throws
  // EngineError ERR_OUT_OF_RANGE for bad input (checked before anything is allocated) and
  // ABORT_ERR when `abort` is set (checked between layers).
  static void Run(const std::shared_ptr<const DecoderModel>& model, const int32_t* ids, const int32_t* lengths, int64_t n_seq, Pooling pooling,
                  float* out, const std::atomic<bool>& abort);
};

}  // namespace decoder
}  // namespace weightmap
