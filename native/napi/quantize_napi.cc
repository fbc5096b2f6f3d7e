// quantizeQ8Weights(file, byteOffset, dtype, count, group, q, scales) -> Promise<void>: Q8_0 of
// `count` f32/f16/bf16 elements of a MappedFile (convert/quantize_q8.h) on libuv's thread pool, so
// format writers quantize without blocking the event loop. Every argument is checked before the
// worker starts; the worker keeps the mapping and both output arrays alive until it settles.
//
// quantizeGgmlQ8_0(file, byteOffset, dtype, count, out[, scalesByteOffset, group, first]) /
// quantizeGgmlQ8_0(values, out) -> Promise<void>: ggml Q8_0 blocks (34 bytes per 32 elements) of a
// MappedFile range (f32/f16/bf16, or 'q8_0' with its float32 scales: elements first.. of the tensor
// whose int8 values start at byteOffset - first) or of a Float32Array, into the Uint8Array `out`,
// on the pool likewise.
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

class GgmlQ8Worker : public PromiseWorker {
 public:
  // `mapping` (a file source) or `source_ref` (a Float32Array source) keeps `src` alive.
  GgmlQ8Worker(Napi::Env env, std::shared_ptr<Mapping> mapping, Napi::Object source, const uint8_t* src,
               convert::WeightType type, int64_t count, Napi::Uint8Array out)
      : PromiseWorker(env, "weightmap:quantizeGgmlQ8_0"),
        mapping_(std::move(mapping)),
        src_(src),
        type_(type),
        count_(count),
        out_(out.Data()),
        source_ref_(Napi::Persistent(source)),
        out_ref_(Napi::Persistent(static_cast<Napi::Object>(out))) {}

  // A q8_0 source: its scales, group size and the index of the first element.
  void SetQ8(const uint8_t* scales, int64_t group, int64_t first) {
    scales_ = scales;
    group_ = group;
    first_ = first;
  }

  void Execute() override {
    if (scales_) convert::QuantizeGgmlQ8_0FromQ8(src_, scales_, group_, first_, count_, out_);
    else convert::QuantizeGgmlQ8_0(src_, type_, count_, out_);
  }

 private:
  std::shared_ptr<Mapping> mapping_;
  const uint8_t* src_;
  const uint8_t* scales_ = nullptr;
  int64_t group_ = 0;
  int64_t first_ = 0;
  convert::WeightType type_;
  int64_t count_;
  uint8_t* out_;
  Napi::ObjectReference source_ref_;
  Napi::ObjectReference out_ref_;
};

Napi::Value QuantizeGgmlQ8_0(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* usage = "quantizeGgmlQ8_0(file, byteOffset, dtype, count, out) or quantizeGgmlQ8_0(values, out)";
  if (info.Length() < 2) ThrowTypeError(env, usage);
  const bool fromValues = info[0].IsTypedArray();
  std::shared_ptr<Mapping> mapping;
  const uint8_t* src;
  convert::WeightType type = convert::WeightType::F32;
  int64_t count;
  size_t outArg;
  bool q8 = false;
  const uint8_t* scales = nullptr;
  int64_t group = 0;
  int64_t first = 0;
  if (fromValues) {
    Napi::TypedArray t = info[0].As<Napi::TypedArray>();
    if (t.TypedArrayType() != napi_float32_array) ThrowTypeError(env, "values must be a Float32Array");
    Napi::Float32Array values = t.As<Napi::Float32Array>();
    src = reinterpret_cast<const uint8_t*>(values.Data());
    count = int64_t(values.ElementLength());
    outArg = 1;
  } else {
    if (info.Length() < 5) ThrowTypeError(env, usage);
    mapping = MappedFile::FromValue(info[0]);
    const int64_t offset = IntArg(info, 1, "byteOffset", 0, int64_t(1) << 53);
    q8 = info.Length() > 2 && info[2].IsString() && info[2].As<Napi::String>().Utf8Value() == "q8_0";
    if (!q8) type = TypeArg(info, 2);
    count = IntArg(info, 3, "count", 0, int64_t(1) << 40);
    if (q8) {
      if (info.Length() < 8) ThrowTypeError(env, "a q8_0 source needs scalesByteOffset, group and first");
      const int64_t scalesOffset = IntArg(info, 5, "scalesByteOffset", 0, int64_t(1) << 53);
      group = IntArg(info, 6, "group", 1, kMaxGroup);
      first = IntArg(info, 7, "first", 0, int64_t(1) << 40);
      // The scales of the groups of elements [first, first + count).
      const uint64_t scaleBytes = count == 0 ? 0 : uint64_t((first + count - 1) / group + 1) * 4;
      if (!mapping->Contains(uint64_t(scalesOffset), scaleBytes)) ThrowRange(env, "the scales lie outside the mapping");
      scales = mapping->data() + scalesOffset;
    }
    const uint64_t bytes = uint64_t(count) * uint64_t(q8 ? 1 : convert::WeightTypeBytes(type));
    if (!mapping->Contains(uint64_t(offset), bytes)) ThrowRange(env, "the source range lies outside the mapping");
    src = mapping->data() + offset;
    outArg = 4;
  }
  if (count % convert::kGgmlQ8Block != 0) ThrowRange(env, "count must be a multiple of 32");
  Napi::Uint8Array out = TypedArg<Napi::Uint8Array>(info, outArg, napi_uint8_array, "out (Uint8Array)",
                                                    count / convert::kGgmlQ8Block * convert::kGgmlQ8BlockBytes);
  auto* worker = new GgmlQ8Worker(env, std::move(mapping), info[0].As<Napi::Object>(), src, type, count, out);
  if (q8) worker->SetQ8(scales, group, first);
  return worker->Start();
}

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
  exports.Set("quantizeGgmlQ8_0", Napi::Function::New(env, QuantizeGgmlQ8_0, "quantizeGgmlQ8_0"));
}

}  // namespace

WEIGHTMAP_REGISTER(quantize_q8_weights, Register);

}  // namespace weightmap
