#include "napi/lent_sampler.h"

#include <mutex>
#include <set>

#include "napi/errors.h"
#include "napi/sampler_napi.h"
#include "napi/sampling_params.h"

namespace weightmap {

namespace {

std::mutex lent_mutex;
std::set<const Sampler*> lent;

}  // namespace

LentSampler::LentSampler(Napi::Env env, Napi::Value sampler, Napi::Value params, Napi::Value recent)
    : sampler_(UnwrapSampler(sampler)) {
  if (!sampler_) ThrowTypeError(env, "step(ids, sampler, params, recent): sampler must be a Sampler");
  params_ = ParseSamplingParams(env, params);
  if (!recent.IsUndefined()) {
    if (!recent.IsTypedArray() || recent.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(env, "step(ids, sampler, params, recent): recent must be an Int32Array");
    Napi::Int32Array r = recent.As<Napi::Int32Array>();
    recent_.assign(r.Data(), r.Data() + r.ElementLength());
  }
  {
    std::lock_guard<std::mutex> lock(lent_mutex);
    if (!lent.insert(sampler_).second)
      throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "this Sampler is in use by another step(); await it first");
  }
  ref_ = Napi::Persistent(sampler.As<Napi::Object>());
}

LentSampler::~LentSampler() {
  std::lock_guard<std::mutex> lock(lent_mutex);
  lent.erase(sampler_);
}

int32_t LentSampler::Sample(float* logits, int32_t n) {
  return sampler_->Sample(logits, n, params_, recent_.data(), static_cast<int32_t>(recent_.size()));
}

}  // namespace weightmap
