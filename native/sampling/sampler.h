// Token selection over a vocabulary of logits, run inside the engine's worker thread right after
// the forward pass (so one generation step is one native call). Pure C++, no N-API.
//
// Order of operations (llama.cpp's, which users of node-llama-cpp expect):
//   logit bias -> repetition / frequency / presence penalties over the last `penalty_last_n`
//   tokens -> the allowed-token mask -> if temperature <= 0: argmax (lowest id wins ties) -> top-k -> top-p -> min-p
//   -> temperature -> softmax -> draw with the seeded RNG.
//
// top-k keeps the k highest logits (lower id first on ties); top-p the shortest such prefix whose
// probability exceeds top_p; min-p the tokens with prob >= min_p * max prob. top-p and min-p look
// at the softmax of the logits before temperature (as llama.cpp does).
// The draw (FORMATS.md §5.7, runq's generator and inverse-cdf walk): one coin = Rng::NextF32() per
// sampled token (greedy draws none); the kept tokens, in id order, with weights
// exp((logit - max) / T), are walked and the first whose cumulative weight exceeds coin * total
// wins. Cost over a 150k vocabulary (measured 30-650 us on one core): one vectorized pass for
// greedy; for sampling, vectorized weight passes plus a bounded heap for small top-k, or a
// histogram of the tokens by distance below the max logit for large top-k and top-p, sorting only
// the bucket the cut falls in. Nothing sorts the vocabulary.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace weightmap {

// The defaults are the values that turn each step off; the user-facing defaults (top-k 40,
// top-p 0.95, a 64-token penalty window) live in lib/sampling.ts, which passes every field.
struct SamplingParams {
  float temperature = 0.0f;      // <= 0: greedy
  int32_t top_k = 0;             // <= 0 or >= n: off
  float top_p = 1.0f;            // >= 1: off (keeps the smallest prefix whose probability exceeds top_p)
  float min_p = 0.0f;            // <= 0: off (keeps tokens with prob >= min_p * max prob)
  float repeat_penalty = 1.0f;   // 1: off (divides positive logits, multiplies the others)
  float frequency_penalty = 0.0f;  // subtracted once per occurrence in the window
  float presence_penalty = 0.0f;   // subtracted once if the token occurs in the window
  int32_t penalty_last_n = -1;   // window of recent tokens the penalties look at; 0: none, < 0: all
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, added to its logit); ids outside [0,n) are ignored
  // A constraint's allowed tokens as a bitset (bit i % 32 of word i / 32 set: token i may be
  // drawn; ids past its end are banned); empty: every token. Applied after bias and penalties.
  std::vector<uint32_t> allowed;

  bool HasPenalties() const {
    return penalty_last_n != 0 && (repeat_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f);
  }
};

// xorshift64* as qwen3.c's runq uses it (FORMATS.md §5.7): same seed, same draws.
// Seed 0 would stay 0 forever, so it is replaced by a fixed odd constant.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed ? seed : 0x9E3779B97F4A7C15ull) {}
  uint32_t NextU32();
  float NextF32();  // (u32 >> 8) / 2^24, in [0, 1)
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

struct Candidate {
  float logit;
  int32_t id;
  float w;  // a weight ∝ probability, when a stage has computed one
};

class Sampler {
 public:
  explicit Sampler(uint64_t seed) : rng_(seed) {}
  // Picks a token from logits[0..n). May modify `logits` (penalties, bias, temperature) and uses
  // scratch space owned by the sampler. `recent` are the sequence's tokens so far, oldest first.
  int32_t Sample(float* logits, int32_t n, const SamplingParams& params, const int32_t* recent, int32_t n_recent);
  void Reseed(uint64_t seed) { rng_ = Rng(seed); }
  const Rng& rng() const { return rng_; }

 private:
  Rng rng_;
  // Buckets tokens by distance below the max logit (bucket_of_, probs_ = exp(logit - max), per-bucket
  // counts and masses) for the large top-k and top-p selections. `keep` is a Boundary (sampler.cc).
  void FillBuckets(const float* logits, int32_t n, float max, const void* keep);

  std::vector<Candidate> candidates_;
  std::vector<Candidate> edge_;        // the tokens of the bucket where a cut falls
  std::vector<float> probs_;           // [n] weights over the vocabulary
  std::vector<float> block_sums_;      // [ceil(n / 256)] sums of probs_ by block
  std::vector<uint16_t> bucket_of_;    // [n]
  std::vector<double> bucket_count_;   // [4097]
  std::vector<double> bucket_mass_;    // [4097]
  std::vector<int32_t> window_;        // the penalty window, sorted
};

// The pieces of Sample, exposed for the engines and tests.
void ApplyLogitBias(float* logits, int32_t n, const SamplingParams& params);
void ApplyPenalties(float* logits, int32_t n, const SamplingParams& params, const int32_t* recent,
                    int32_t n_recent, std::vector<int32_t>* scratch);
// Sets the logits of the tokens params.allowed leaves out to −inf (nothing when it is empty).
void ApplyTokenMask(float* logits, int32_t n, const SamplingParams& params);
// Index of the largest logit; the lowest index wins ties; NaN never wins.
int32_t Argmax(const float* logits, int32_t n);

}  // namespace weightmap
