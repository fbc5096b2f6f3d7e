// Turning native failures into JS errors that carry a stable `code`.
#pragma once

#include <napi.h>

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

}  // namespace weightmap
