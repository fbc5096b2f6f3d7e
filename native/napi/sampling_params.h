// Reading sampling parameters and seeds from JS (the NativeSamplingParams object of binding.d.ts),
// shared by the Sampler class and every engine session that samples in its worker.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sampling/sampler.h"

namespace weightmap {

// `value` is undefined (all defaults) or an object with the optional fields of
// NativeSamplingParams. Wrong types throw a TypeError; ranges are the facade's job (lib/sampling.ts).
SamplingParams ParseSamplingParams(Napi::Env env, Napi::Value value);

// A step's allowed-token bitset: a non-empty Uint32Array (TypeError naming `what` otherwise).
std::vector<uint32_t> ParseAllowedTokens(Napi::Env env, Napi::Value value, const std::string& what);

// A u64 seed from a non-negative safe integer or a BigInt in [0, 2^64).
uint64_t ParseSeed(Napi::Env env, Napi::Value value, const char* what = "seed");

}  // namespace weightmap
