// Helpers shared by the gpt, phi and vit N-API wrappers: typed pointers to tensors of a
// validated WeightsSpec, numbers from a config object, the JS class type tags, and the
// translation of engine failures into coded promise rejections.
#pragma once

#include <napi.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "engines/weights_spec.h"

namespace weightmap {

// The f32 / f16 data of tensor `name`, which must have exactly `shape` and that dtype (SpecError
// MISSING_TENSOR, SHAPE_MISMATCH or BAD_DTYPE otherwise). f32 data must be 4-byte aligned.
const float* SpecF32(const WeightsSpec& spec, const std::string& name, const std::vector<int64_t>& shape);
// f16 data may sit at any even or odd offset: the kernels load it unaligned.
const uint16_t* SpecF16(const WeightsSpec& spec, const std::string& name, const std::vector<int64_t>& shape);

// A positive integer field of a config object (TypeError if absent or not one).
int64_t ConfigInt(const Napi::Object& config, const char* key);
// A finite number field, or `fallback` when absent.
double ConfigNumber(const Napi::Object& config, const char* key, double fallback);
// options.threads: absent or 0 = physical cores, else 1..256.
int ThreadsOption(const Napi::Value& options);

// Rejects a promise with a SpecError's code, a RangeError-like ERR_OUT_OF_RANGE, or a plain
// native error: the code and message of any exception thrown by an engine call.
struct FailureInfo {
  std::string code;
  std::string message;
};
FailureInfo DescribeFailure(const std::exception& e);

// Converts SpecError (and std::invalid_argument from an engine's config checks) thrown while a
// JS constructor runs into a coded JS error.
[[noreturn]] void ThrowSpecFailure(Napi::Env env, const std::exception& e);

// Raised by a worker whose abort flag was set between layers.
constexpr const char* kAbortCode = "ABORT_ERR";
constexpr const char* kAbortMessage = "The operation was aborted";

// Type tags so a native constructor can check that an argument is one of our wrappers before
// unwrapping it.
extern const napi_type_tag kGptModelTag;
extern const napi_type_tag kPhiModelTag;

// Unwraps `value` as a T tagged with `tag`, or throws a TypeError naming `what`.
template <typename T>
T* UnwrapTagged(const Napi::Value& value, const napi_type_tag& tag, const char* what) {
  if (!value.IsObject() || !value.As<Napi::Object>().CheckTypeTag(&tag)) {
    Napi::Error error = Napi::TypeError::New(value.Env(), std::string("expected a ") + what);
    error.Set("code", Napi::String::New(value.Env(), "ERR_INVALID_ARG_TYPE"));
    throw error;
  }
  return T::Unwrap(value.As<Napi::Object>());
}

}  // namespace weightmap
