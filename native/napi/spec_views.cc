#include "napi/spec_views.h"

#include <cmath>
#include <stdexcept>

#include "napi/errors.h"
#include "threadpool.h"

namespace weightmap {

const napi_type_tag kGptModelTag = {0x7c1e4a2b9d3f4e01ULL, 0x8a5b6c7d1e2f3a41ULL};
const napi_type_tag kPhiModelTag = {0x7c1e4a2b9d3f4e02ULL, 0x8a5b6c7d1e2f3a42ULL};

namespace {

const TensorRef& RequireTyped(const WeightsSpec& spec, const std::string& name, const std::vector<int64_t>& shape, DType dtype) {
  const TensorRef& t = spec.Require(name, shape);
  if (t.dtype != dtype)
    throw SpecError("BAD_DTYPE", "tensor " + t.Describe() + " must be " + DTypeName(dtype) + " for this engine");
  return t;
}

}  // namespace

const float* SpecF32(const WeightsSpec& spec, const std::string& name, const std::vector<int64_t>& shape) {
  const TensorRef& t = RequireTyped(spec, name, shape, DType::F32);
  if (reinterpret_cast<uintptr_t>(t.data) % alignof(float) != 0)
    throw SpecError("UNSUPPORTED", "f32 tensor " + t.Describe() + " is not 4-byte aligned in " + spec.PathOf(t));
  return reinterpret_cast<const float*>(t.data);
}

const uint16_t* SpecF16(const WeightsSpec& spec, const std::string& name, const std::vector<int64_t>& shape) {
  return reinterpret_cast<const uint16_t*>(RequireTyped(spec, name, shape, DType::F16).data);
}

int64_t ConfigInt(const Napi::Object& config, const char* key) {
  Napi::Value v = config.Get(key);
  double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
  if (!(d >= 1) || d > 1e12 || std::floor(d) != d)
    ThrowTypeError(config.Env(), std::string("config.") + key + " must be a positive integer");
  return static_cast<int64_t>(d);
}

double ConfigNumber(const Napi::Object& config, const char* key, double fallback) {
  Napi::Value v = config.Get(key);
  if (v.IsUndefined()) return fallback;
  if (!v.IsNumber() || !std::isfinite(v.As<Napi::Number>().DoubleValue()))
    ThrowTypeError(config.Env(), std::string("config.") + key + " must be a finite number");
  return v.As<Napi::Number>().DoubleValue();
}

int ThreadsOption(const Napi::Value& options) {
  if (options.IsUndefined() || options.IsNull()) return ThreadPool::PhysicalCores();
  if (!options.IsObject()) ThrowTypeError(options.Env(), "options must be an object");
  Napi::Value v = options.As<Napi::Object>().Get("threads");
  if (v.IsUndefined()) return ThreadPool::PhysicalCores();
  double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
  if (!(d >= 0) || d > 256 || std::floor(d) != d) ThrowTypeError(options.Env(), "options.threads must be an integer in [0, 256]");
  return d == 0 ? ThreadPool::PhysicalCores() : static_cast<int>(d);
}

FailureInfo DescribeFailure(const std::exception& e) {
  if (auto* spec = dynamic_cast<const SpecError*>(&e)) return {spec->code(), spec->what()};
  if (dynamic_cast<const std::out_of_range*>(&e)) return {"ERR_OUT_OF_RANGE", e.what()};
  if (dynamic_cast<const std::bad_alloc*>(&e)) return {"ERR_WEIGHTMAP_NO_MEMORY", "out of memory"};
  return {"ERR_WEIGHTMAP_NATIVE", e.what()};
}

void ThrowSpecFailure(Napi::Env env, const std::exception& e) {
  if (dynamic_cast<const std::invalid_argument*>(&e)) throw MakeError(env, "CONFIG_MISMATCH", e.what());
  FailureInfo f = DescribeFailure(e);
  throw MakeError(env, f.code, f.message);
}

}  // namespace weightmap
