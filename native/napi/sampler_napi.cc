// The sampler as a JS class, synchronous (one call is well under a millisecond): for tests and for
// callers that run their own forward pass. Engines sample inside their own workers instead.
#include <napi.h>

#include <cstring>
#include <vector>

#include "napi/errors.h"
#include "napi/register.h"
#include "napi/sampler_napi.h"
#include "napi/sampling_params.h"
#include "sampling/sampler.h"

namespace weightmap {

namespace {

// Marks JS objects made by this class, so UnwrapSampler can tell them apart from any other.
constexpr napi_type_tag kSamplerTag = {0x7f3c2a9e5b1d4e60ull, 0x9a4b8c2d1e0f3a57ull};

class SamplerWrap : public Napi::ObjectWrap<SamplerWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function ctor = DefineClass(env, "Sampler",
        {InstanceMethod<&SamplerWrap::Sample>("sample"),
         StaticMethod<&SamplerWrap::AdjustLogits>("adjustLogits"),
         InstanceMethod<&SamplerWrap::Reseed>("reseed"),
         InstanceAccessor<&SamplerWrap::RngState>("rngState")});
    exports.Set("Sampler", ctor);
  }

  explicit SamplerWrap(const Napi::CallbackInfo& info)
      : Napi::ObjectWrap<SamplerWrap>(info), sampler_(ParseSeed(info.Env(), info[0])) {
    info.This().As<Napi::Object>().TypeTag(&kSamplerTag);
  }

  Sampler* native() { return &sampler_; }

  const SamplingParams& Bound(Napi::Env env, Napi::Value params) {
    static const SamplingParams kDefaults;
    if (params.IsUndefined() || params.IsNull()) return kDefaults;
    if (!params_ref_.IsEmpty() && params_ref_.Value().StrictEquals(params)) return params_;
    SamplingParams parsed = ParseSamplingParams(env, params);  // throws for bad params: the old pair stays
    params_ = std::move(parsed);
    params_ref_ = Napi::Persistent(params.As<Napi::Object>());
    return params_;
  }

 private:
  // sample(logits: Float32Array, params?, recent?: Int32Array, allowedTokens?: Uint32Array): the
  // logits are copied, not changed; params as a step's (BoundParams), allowedTokens this draw's.
  Napi::Value Sample(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Float32Array logits = LogitsArg(info);
    SamplingParams params = Bound(env, info.Length() > 1 ? info[1] : env.Undefined());
    if (info.Length() > 3 && !info[3].IsUndefined()) params.allowed = ParseAllowedTokens(env, info[3], "allowedTokens");
    auto [recent, n_recent] = RecentArg(info);
    scratch_.resize(logits.ElementLength());
    std::memcpy(scratch_.data(), logits.Data(), scratch_.size() * sizeof(float));
    int32_t token = sampler_.Sample(scratch_.data(), static_cast<int32_t>(scratch_.size()), params, recent, n_recent);
    return Napi::Number::New(env, token);
  }

  // adjustLogits(logits, params?, recent?): a copy of the logits after the logit bias, the
  // penalties and the allowed-token mask, the deterministic first stages of sample().
  static Napi::Value AdjustLogits(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Float32Array logits = LogitsArg(info);
    SamplingParams params = ParseSamplingParams(env, info.Length() > 1 ? info[1] : env.Undefined());
    auto [recent, n_recent] = RecentArg(info);
    Napi::Float32Array out = Napi::Float32Array::New(env, logits.ElementLength());
    std::memcpy(out.Data(), logits.Data(), logits.ElementLength() * sizeof(float));
    const int32_t n = static_cast<int32_t>(out.ElementLength());
    std::vector<int32_t> scratch;
    ApplyLogitBias(out.Data(), n, params);
    ApplyPenalties(out.Data(), n, params, recent, n_recent, &scratch);
    ApplyTokenMask(out.Data(), n, params);
    return out;
  }

  static Napi::Float32Array LogitsArg(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
      ThrowTypeError(env, "logits must be a Float32Array");
    Napi::Float32Array logits = info[0].As<Napi::Float32Array>();
    if (logits.ElementLength() == 0 || logits.ElementLength() > 0x7fffffff)
      throw MakeError(env, "ERR_OUT_OF_RANGE", "logits must hold 1 to 2^31-1 values");
    return logits;
  }

  static std::pair<const int32_t*, int32_t> RecentArg(const Napi::CallbackInfo& info) {
    if (info.Length() <= 2 || info[2].IsUndefined()) return {nullptr, 0};
    if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(info.Env(), "recent must be an Int32Array");
    Napi::Int32Array r = info[2].As<Napi::Int32Array>();
    return {r.Data(), static_cast<int32_t>(r.ElementLength())};
  }

  Napi::Value Reseed(const Napi::CallbackInfo& info) {
    sampler_.Reseed(ParseSeed(info.Env(), info[0]));
    return info.Env().Undefined();
  }

  Napi::Value RngState(const Napi::CallbackInfo& info) {
    return Napi::BigInt::New(info.Env(), sampler_.rng().state());
  }

  Sampler sampler_;
  std::vector<float> scratch_;
  Napi::ObjectReference params_ref_;  // the last params object given (Bound), and its parse
  SamplingParams params_;
};

// rngDraws(seed, count) -> { u32: Uint32Array, f32: Float32Array }: two generators with the same
// seed, one read with NextU32 and one with NextF32, so tests can check both against the definition.
Napi::Value RngDraws(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t seed = ParseSeed(env, info[0]);
  if (!info[1].IsNumber()) ThrowTypeError(env, "rngDraws(seed, count): count must be a number");
  double count = info[1].As<Napi::Number>().DoubleValue();
  if (!(count >= 0 && count <= (1 << 24)) || count != static_cast<double>(static_cast<int64_t>(count)))
    throw MakeError(env, "ERR_OUT_OF_RANGE", "rngDraws(seed, count): count must be an integer in [0, 2^24]");
  size_t n = static_cast<size_t>(count);
  Napi::Uint32Array u32 = Napi::Uint32Array::New(env, n);
  Napi::Float32Array f32 = Napi::Float32Array::New(env, n);
  Rng a(seed), b(seed);
  for (size_t i = 0; i < n; ++i) {
    u32[i] = a.NextU32();
    f32[i] = b.NextF32();
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("u32", u32);
  out.Set("f32", f32);
  return out;
}

}  // namespace

Sampler* UnwrapSampler(Napi::Value value) {
  if (!value.IsObject()) return nullptr;
  Napi::Object object = value.As<Napi::Object>();
  if (!object.CheckTypeTag(&kSamplerTag)) return nullptr;
  return SamplerWrap::Unwrap(object)->native();
}

const SamplingParams& BoundParams(Napi::Env env, Napi::Value sampler, Napi::Value params) {
  return SamplerWrap::Unwrap(sampler.As<Napi::Object>())->Bound(env, params);
}

namespace {

void Register(Napi::Env env, Napi::Object exports) {
  SamplerWrap::Init(env, exports);
  exports.Set("rngDraws", Napi::Function::New(env, RngDraws, "rngDraws"));
}

}  // namespace

WEIGHTMAP_REGISTER(Sampler, Register);

}  // namespace weightmap
