// Token selection over a vocabulary of logits, run inside the engine's worker thread right after
// the forward pass (so one generation step is one native call). Pure C++, no N-API.
//
// Order of operations (llama.cpp's, which users of node-llama-cpp expect):
//   logit bias -> repetition / frequency / presence penalties over the last `penalty_last_n`
//   tokens -> if temperature <= 0: argmax (lowest id wins ties) -> top-k -> top-p -> min-p
//   -> temperature -> softmax -> draw with the seeded RNG.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace weightmap {

struct SamplingParams {
  float temperature = 0.0f;      // <= 0: greedy
  int32_t top_k = 0;             // <= 0: off
  float top_p = 1.0f;            // >= 1: off
  float min_p = 0.0f;            // <= 0: off
  float repeat_penalty = 1.0f;   // 1: off (divides positive logits, multiplies negative ones)
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int32_t penalty_last_n = 64;   // window of recent tokens the penalties look at
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, added to its logit)
};

// xorshift64* as qwen3.c's runq uses it (FORMATS.md §5.7): same seed, same draws.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed ? seed : 0x9E3779B97F4A7C15ull) {}
  uint32_t NextU32();
  float NextF32();  // in [0, 1)
 private:
  uint64_t state_;
};

class Sampler {
 public:
  explicit Sampler(uint64_t seed) : rng_(seed) {}
  // Picks a token from logits[0..n). May modify `logits` (penalties, bias, temperature) and uses
  // scratch space owned by the sampler. `recent` are the sequence's tokens so far, oldest first.
  int32_t Sample(float* logits, int32_t n, const SamplingParams& params, const int32_t* recent, int32_t n_recent);
  void Reseed(uint64_t seed) { rng_ = Rng(seed); }

 private:
  Rng rng_;
  std::vector<std::pair<float, int32_t>> candidates_;
  std::vector<float> probs_;
};

}  // namespace weightmap
