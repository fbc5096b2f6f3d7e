// For engines that sample inside their own workers with a Sampler object made in JS (so the
// generator's state carries over from one step to the next): `new Sampler(seed)` from JS, passed to
// the engine's step call, read there with UnwrapSampler on the JS thread.
#pragma once

#include <napi.h>

#include "sampling/sampler.h"

namespace weightmap {

// The native Sampler behind a JS Sampler object, or nullptr when `value` is something else. The
// caller keeps a reference to the JS object (Napi::ObjectReference) while a worker uses the
// pointer, and runs one worker at a time per Sampler.
Sampler* UnwrapSampler(Napi::Value value);

// The parse of `params` (NativeSamplingParams, or undefined: the defaults) for the JS Sampler
// `sampler` (one UnwrapSampler accepts): a Sampler keeps the last params object it was given and
// its parse, so a generation that passes one object at every step has it read at its first step
// only (a params object is read once per Sampler: pass a new one to change the params). The
// reference stays valid until the next call for this Sampler. JS thread.
const SamplingParams& BoundParams(Napi::Env env, Napi::Value sampler, Napi::Value params);

}  // namespace weightmap
