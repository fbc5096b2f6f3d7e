// quantizeQ8Weights(file, byteOffset, dtype, count, group, q, scales) -> Promise<void>: Q8_0 of
// `count` f32/f16/bf16 elements of a MappedFile (convert/quantize_q8.h) on libuv's thread pool, so
// format writers quantize without blocking the event loop. Every argument is checked before the
// worker starts; the worker keeps the mapping and both output arrays alive until it settles.
#include <napi.h>

#include <cmath>
#include <memory>
#include <string>

#include "convert/quantize_q8.h"
#include "mmap/mapping.h"
#include "napi/errors.h"
#include "napi/mapped_file.h"
#include "napi/promise_worker.h"
#include "napi/register.h"

namespace weightmap {

namespace {

constexpr int64_t kMaxGroup = int64_t(1) << 20;

convert::WeightType TypeArg(const Napi::CallbackInfo& info, size_t i) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsString()) ThrowTypeError(env, "dtype must be 'f32', 'f16' or 'bf16'");
  const std::string name = info[i].As<Napi::String>().Utf8Value();
  if (name == "f32") return convert::WeightType::F32;
  if (name == "f16") return convert::WeightType::F16;
  if (name == "bf16") return convert::WeightType::BF16;
  ThrowTypeError(env, "dtype must be 'f32', 'f16' or 'bf16', got '" + name + "'");
  return convert::WeightType::F32;
}

template <class Array>
Array TypedArg(const Napi::CallbackInfo& info, size_t i, napi_typedarray_type type, const char* what, int64_t length) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != type)
    ThrowTypeError(env, std::string(what) + " has the wrong type");
  Array a = info[i].As<Array>();
  if (int64_t(a.ElementLength()) != length)
    ThrowRange(env, std::string(what) + " has " + std::to_string(a.ElementLength()) + " elements, expected " + std::to_string(length));
  return a;
}

class QuantizeWorker : public PromiseWorker {
 public:
  QuantizeWorker(Napi::Env env, std::shared_ptr<Mapping> mapping, const uint8_t* src, convert::WeightType type,
                 int64_t count, int group, Napi::Int8Array q, Napi::Float32Array scales)
      : PromiseWorker(env, "weightmap:quantizeQ8Weights"),
        mapping_(std::move(mapping)),
        src_(src),
        type_(type),
        count_(count),
        group_(group),
        q_(q.Data()),
        scales_(scales.Data()),
        q_ref_(Napi::Persistent(static_cast<Napi::Object>(q))),
        scales_ref_(Napi::Persistent(static_cast<Napi::Object>(scales))) {}

  void Execute() override { convert::QuantizeQ8Weights(src_, type_, count_, group_, q_, scales_); }

 private:
  std::shared_ptr<Mapping> mapping_;  // the pages stay mapped while the worker reads them
  const uint8_t* src_;
  convert::WeightType type_;
  int64_t count_;
  int group_;
  int8_t* q_;
  float* scales_;
  Napi::ObjectReference q_ref_;
  Napi::ObjectReference scales_ref_;
};

Napi::Value QuantizeQ8Weights(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 7) ThrowTypeError(env, "quantizeQ8Weights(file, byteOffset, dtype, count, group, q, scales)");
  std::shared_ptr<Mapping> mapping = MappedFile::FromValue(info[0]);
  const int64_t offset = IntArg(info, 1, "byteOffset", 0, int64_t(1) << 53);
  const convert::WeightType type = TypeArg(info, 2);
  const int64_t count = IntArg(info, 3, "count", 0, int64_t(1) << 40);
  const int group = int(IntArg(info, 4, "group", 1, kMaxGroup));
  if (count % group != 0) ThrowRange(env, "count must be a multiple of group");
  const uint64_t bytes = uint64_t(count) * uint64_t(convert::WeightTypeBytes(type));
  if (!mapping->Contains(uint64_t(offset), bytes)) ThrowRange(env, "the source range lies outside the mapping");
  Napi::Int8Array q = TypedArg<Napi::Int8Array>(info, 5, napi_int8_array, "q (Int8Array)", count);
  Napi::Float32Array scales = TypedArg<Napi::Float32Array>(info, 6, napi_float32_array, "scales (Float32Array)", count / group);
  const uint8_t* src = mapping->data() + offset;
  auto* worker = new QuantizeWorker(env, std::move(mapping), src, type, count, group, q, scales);
  return worker->Start();
}

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("quantizeQ8Weights", Napi::Function::New(env, QuantizeQ8Weights, "quantizeQ8Weights"));
}

}  // namespace

WEIGHTMAP_REGISTER(quantize_q8_weights, Register);

}  // namespace weightmap
