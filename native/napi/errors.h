// Turning native failures into JS errors that carry a stable `code`.
#pragma once

#include <napi.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace weightmap {

inline Napi::Error MakeError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

inline void ThrowTypeError(Napi::Env env, const std::string& message) {
  Napi::Error error = Napi::TypeError::New(env, message);
  error.Set("code", Napi::String::New(env, "ERR_INVALID_ARG_TYPE"));
  throw error;
}

[[noreturn]] inline void ThrowRange(Napi::Env env, const std::string& message) {
  Napi::Error error = Napi::RangeError::New(env, message);
  error.Set("code", Napi::String::New(env, "ERR_OUT_OF_RANGE"));
  throw error;
}

// info[i] as an integer in [min, max]: TypeError (ERR_INVALID_ARG_TYPE) when it is no number,
// RangeError (ERR_OUT_OF_RANGE) when it is fractional or outside.
inline int64_t IntArg(const Napi::CallbackInfo& info, size_t i, const char* what, int64_t min, int64_t max) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsNumber()) ThrowTypeError(env, std::string(what) + " must be a number");
  const double d = info[i].As<Napi::Number>().DoubleValue();
  if (!(d == std::floor(d)) || d < double(min) || d > double(max))
    ThrowRange(env, std::string(what) + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return int64_t(d);
}

}  // namespace weightmap
