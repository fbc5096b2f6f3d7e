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

}  // namespace weightmap
