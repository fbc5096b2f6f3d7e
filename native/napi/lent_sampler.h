// A JS Sampler lent to one engine worker (a step: forward pass + token choice in the same native
// call): the arguments are read on the JS thread, the sampler is used on the worker thread, and it
// is given back when the lease is destroyed (the worker's Release, on the JS thread). One registry
// for every engine: one worker at a time may hold a given Sampler, across every session, model and
// engine family of the process (its generator state is not thread-safe).
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>

#include "sampling/sampler.h"

namespace weightmap {

class LentSampler {
 public:
  // `sampler` a JS Sampler, `params` NativeSamplingParams or undefined (read once per Sampler and
  // object: BoundParams), `allowed` this step's allowed-token bitset (a Uint32Array) or undefined
  // (the params' own); `what` names the argument in errors. Throws a TypeError for bad arguments
  // and ERR_WEIGHTMAP_BUSY when the sampler is lent.
  LentSampler(Napi::Env env, Napi::Value sampler, Napi::Value params, Napi::Value allowed, const std::string& what);
  ~LentSampler();
  LentSampler(const LentSampler&) = delete;
  LentSampler& operator=(const LentSampler&) = delete;

  // Picks the next token from logits[0..n) (modified in place), the penalties looking at
  // history[0..n_history) (oldest first; the sampler takes its window). Worker thread.
  int32_t Sample(float* logits, int32_t n, const int32_t* history, int32_t n_history);

 private:
  Sampler* sampler_;
  Napi::ObjectReference ref_;  // keeps the JS Sampler (and so sampler_) alive
  SamplingParams params_;
};

}  // namespace weightmap
