#include "napi/sampling_params.h"

#include <cmath>

#include "napi/errors.h"

namespace weightmap {

namespace {

float FloatField(Napi::Env env, Napi::Object o, const char* key, float fallback) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  if (!v.IsNumber()) ThrowTypeError(env, std::string("sampling params: ") + key + " must be a number");
  return v.As<Napi::Number>().FloatValue();
}

int32_t IntField(Napi::Env env, Napi::Object o, const char* key, int32_t fallback) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  if (!v.IsNumber()) ThrowTypeError(env, std::string("sampling params: ") + key + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != std::floor(d))
    ThrowTypeError(env, std::string("sampling params: ") + key + " must be a 32-bit integer");
  return static_cast<int32_t>(d);
}

}  // namespace

SamplingParams ParseSamplingParams(Napi::Env env, Napi::Value value) {
  SamplingParams p;
  if (value.IsUndefined() || value.IsNull()) return p;
  if (!value.IsObject()) ThrowTypeError(env, "sampling params must be an object");
  Napi::Object o = value.As<Napi::Object>();
  p.temperature = FloatField(env, o, "temperature", p.temperature);
  p.top_k = IntField(env, o, "topK", p.top_k);
  p.top_p = FloatField(env, o, "topP", p.top_p);
  p.min_p = FloatField(env, o, "minP", p.min_p);
  p.repeat_penalty = FloatField(env, o, "repeatPenalty", p.repeat_penalty);
  p.frequency_penalty = FloatField(env, o, "frequencyPenalty", p.frequency_penalty);
  p.presence_penalty = FloatField(env, o, "presencePenalty", p.presence_penalty);
  p.penalty_last_n = IntField(env, o, "penaltyLastN", p.penalty_last_n);
  Napi::Value ids_v = o.Get("logitBiasIds");
  Napi::Value values_v = o.Get("logitBiasValues");
  if (!ids_v.IsUndefined() || !values_v.IsUndefined()) {
    if (!ids_v.IsTypedArray() || ids_v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(env, "sampling params: logitBiasIds must be an Int32Array");
    if (!values_v.IsTypedArray() || values_v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
      ThrowTypeError(env, "sampling params: logitBiasValues must be a Float32Array");
    Napi::Int32Array ids = ids_v.As<Napi::Int32Array>();
    Napi::Float32Array values = values_v.As<Napi::Float32Array>();
    if (ids.ElementLength() != values.ElementLength())
      ThrowTypeError(env, "sampling params: logitBiasIds and logitBiasValues differ in length");
    p.logit_bias.reserve(ids.ElementLength());
    for (size_t i = 0; i < ids.ElementLength(); ++i) p.logit_bias.emplace_back(ids[i], values[i]);
  }
  Napi::Value allowed_v = o.Get("allowedTokens");
  if (!allowed_v.IsUndefined()) p.allowed = ParseAllowedTokens(env, allowed_v, "sampling params: allowedTokens");
  return p;
}

std::vector<uint32_t> ParseAllowedTokens(Napi::Env env, Napi::Value value, const std::string& what) {
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
    ThrowTypeError(env, what + " must be a Uint32Array");
  Napi::Uint32Array words = value.As<Napi::Uint32Array>();
  if (words.ElementLength() == 0) ThrowTypeError(env, what + " must not be empty");
  return std::vector<uint32_t>(words.Data(), words.Data() + words.ElementLength());
}

uint64_t ParseSeed(Napi::Env env, Napi::Value value, const char* what) {
  if (value.IsBigInt()) {
    bool lossless = false;
    uint64_t seed = value.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) ThrowTypeError(env, std::string(what) + " must be a BigInt in [0, 2^64)");
    return seed;
  }
  if (value.IsNumber()) {
    double d = value.As<Napi::Number>().DoubleValue();
    if (!(d >= 0) || d > 9007199254740991.0 || d != std::floor(d))
      ThrowTypeError(env, std::string(what) + " must be a non-negative safe integer or a BigInt");
    return static_cast<uint64_t>(d);
  }
  ThrowTypeError(env, std::string(what) + " must be a number or a BigInt");
  return 0;
}

}  // namespace weightmap
