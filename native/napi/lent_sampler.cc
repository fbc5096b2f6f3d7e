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

LentSampler::LentSampler(Napi::Env env, Napi::Value sampler, Napi::Value params, Napi::Value allowed,
                         const std::string& what)
    : sampler_(UnwrapSampler(sampler)) {
  if (!sampler_) ThrowTypeError(env, what + " must be a Sampler");
  params_ = BoundParams(env, sampler, params);
  if (!allowed.IsUndefined()) params_.allowed = ParseAllowedTokens(env, allowed, what + "'s allowedTokens");
  {
    std::lock_guard<std::mutex> lock(lent_mutex);
    if (!lent.insert(sampler_).second)
      throw MakeError(env, "ERR_WEIGHTMAP_BUSY", what + " is in use by another step; await it first");
  }
  ref_ = Napi::Persistent(sampler.As<Napi::Object>());
}

LentSampler::~LentSampler() {
  std::lock_guard<std::mutex> lock(lent_mutex);
  lent.erase(sampler_);
}

int32_t LentSampler::Sample(float* logits, int32_t n, const int32_t* history, int32_t n_history) {
  return sampler_->Sample(logits, n, params_, history, n_history);
}

}  // namespace weightmap
