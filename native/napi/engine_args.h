// Reading an engine's load arguments from JS: the weights spec (into the plain C++ WeightsSpec of
// native/engines/weights_spec.h), config fields and the threads option. Misuse (a field of the
// wrong type) is a TypeError; a bad layout is a SpecError, which the caller turns into a coded error.
//
// Spec shape (binding.d.ts EngineWeightsSpec):
//   { files: MappedFile[],
//     tensors: { [canonicalName]: { dtype, shape: number[], file: number, byteOffset, byteLength,
//                                   scales?: { byteOffset, byteLength, groupSize },
//                                   transposed?: boolean } } }
#pragma once

#include <napi.h>

#include <cstdint>
#include <memory>

#include "engines/weights_spec.h"

namespace weightmap {

std::shared_ptr<WeightsSpec> WeightsSpecFromValue(Napi::Value spec);

// An integer field in [lo, hi]: TypeError when absent or no number, ERR_OUT_OF_RANGE outside.
int64_t ReadInt(const Napi::Object& o, const char* key, int64_t lo, int64_t hi);
// A finite number field, or `fallback` when absent (TypeError for anything else).
double ReadNumber(const Napi::Object& o, const char* key, double fallback);
// A number field that must be present.
double ReadNumber(const Napi::Object& o, const char* key);
bool ReadBool(const Napi::Object& o, const char* key);
// `value` as an object (TypeError naming `what` otherwise); undefined or null as an empty one.
Napi::Object OptionsObject(Napi::Env env, Napi::Value value, const char* what);
// options.threads: absent or 0 = physical cores (0 is passed on), else 1..1024.
int ThreadsOption(const Napi::Object& options);

}  // namespace weightmap
