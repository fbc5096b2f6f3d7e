// A JS Sampler lent to one engine worker for a step() (forward pass + token choice in the same
// native call): the arguments are read on the JS thread, the sampler is used in Execute(), and it
// is given back when the worker settles. One worker at a time may hold a given Sampler.
#pragma once

#include <napi.h>

#include <cstdint>
#include <vector>

#include "sampling/sampler.h"

namespace weightmap {

class LentSampler {
 public:
  // step(ids, sampler, params?, recent?): `sampler` a JS Sampler, `params` NativeSamplingParams or
  // undefined, `recent` an Int32Array penalty window or undefined. Throws a TypeError for bad
  // arguments and ERR_WEIGHTMAP_BUSY when the sampler is lent to another running step.
  LentSampler(Napi::Env env, Napi::Value sampler, Napi::Value params, Napi::Value recent);
  ~LentSampler();
  LentSampler(const LentSampler&) = delete;
  LentSampler& operator=(const LentSampler&) = delete;

  // Picks the next token from logits[0..n) (modified in place). Worker thread.
  int32_t Sample(float* logits, int32_t n);

 private:
  Sampler* sampler_;
  Napi::ObjectReference ref_;  // keeps the JS Sampler (and so sampler_) alive
  SamplingParams params_;
  std::vector<int32_t> recent_;
};

}  // namespace weightmap
