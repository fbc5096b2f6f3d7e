// dequantizeWeights(file, byteOffset, dtype, count, out) -> Promise<void>: `count` elements of a
// MappedFile as float32 on libuv's thread pool, exactly (f32, f16, bf16 widen; ggml blocks as
// kernels/ggml_blocks.h dequantizes them, bit-equal to ggml). Every argument is checked before
// the worker starts; the worker keeps the mapping and `out` alive until it settles.
#include <napi.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/ggml_blocks.h"
#include "kernels/kernels.h"
#include "mmap/mapping.h"
#include "napi/errors.h"
#include "napi/mapped_file.h"
#include "napi/promise_worker.h"
#include "napi/register.h"

namespace weightmap {

namespace {

// A source element type: a plain float type, or a ggml block type.
struct Source {
  enum { F32, F16, BF16, Blocks } kind = F32;
  kernels::BlockType block = kernels::BlockType::Q4_0;
  int values = 1;  // per block (1 for plain types)
  int bytes = 4;   // per block
};

Source SourceArg(const Napi::CallbackInfo& info, size_t i) {
  Napi::Env env = info.Env();
  const char* expected = "dtype must be 'f32', 'f16', 'bf16' or a ggml block type ('ggml_q8_0', 'ggml_q4_k', ...)";
  if (info.Length() <= i || !info[i].IsString()) ThrowTypeError(env, expected);
  const std::string name = info[i].As<Napi::String>().Utf8Value();
  Source s;
  if (name == "f32") return s;
  if (name == "f16" || name == "bf16") {
    s.kind = name == "f16" ? Source::F16 : Source::BF16;
    s.bytes = 2;
    return s;
  }
  if (name.rfind("ggml_", 0) == 0 && kernels::BlockTypeFromName(name.c_str() + 5, &s.block)) {
    s.kind = Source::Blocks;
    s.values = kernels::InfoOf(s.block).values;
    s.bytes = kernels::InfoOf(s.block).bytes;
    return s;
  }
  ThrowTypeError(env, std::string(expected) + ", got '" + name + "'");
  return s;
}

class DequantizeWorker : public PromiseWorker {
 public:
  DequantizeWorker(Napi::Env env, std::shared_ptr<Mapping> mapping, const uint8_t* src, Source source, int64_t count,
                   Napi::Float32Array out)
      : PromiseWorker(env, "weightmap:dequantizeWeights"),
        mapping_(std::move(mapping)),
        src_(src),
        source_(source),
        count_(count),
        out_(out.Data()),
        out_ref_(Napi::Persistent(static_cast<Napi::Object>(out))) {}

  void Execute() override {
    if (source_.kind == Source::Blocks) {
      kernels::DequantizeBlocks(source_.block, src_, out_, count_);
      return;
    }
    if (source_.kind == Source::F32) {
      std::memcpy(out_, src_, count_ * 4);
      return;
    }
    // f16 / bf16 through an aligned chunk (the mapping promises no alignment).
    const kernels::KernelTable& k = kernels::Active();
    uint16_t half[4096];
    for (int64_t i = 0; i < count_; i += 4096) {
      const int64_t n = std::min<int64_t>(4096, count_ - i);
      std::memcpy(half, src_ + i * 2, n * 2);
      if (source_.kind == Source::F16) k.f16_to_f32(half, out_ + i, n);
      else k.bf16_to_f32(half, out_ + i, n);
    }
  }

 private:
  std::shared_ptr<Mapping> mapping_;  // the pages stay mapped while the worker reads them
  const uint8_t* src_;
  Source source_;
  int64_t count_;
  float* out_;
  Napi::ObjectReference out_ref_;
};

Napi::Value DequantizeWeights(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 5) ThrowTypeError(env, "dequantizeWeights(file, byteOffset, dtype, count, out)");
  std::shared_ptr<Mapping> mapping = MappedFile::FromValue(info[0]);
  const int64_t offset = IntArg(info, 1, "byteOffset", 0, int64_t(1) << 53);
  const Source source = SourceArg(info, 2);
  const int64_t count = IntArg(info, 3, "count", 0, int64_t(1) << 40);
  if (count % source.values != 0) ThrowRange(env, "count must be a whole number of " + std::to_string(source.values) + "-value blocks");
  const uint64_t bytes = uint64_t(count / source.values) * uint64_t(source.bytes);
  if (!mapping->Contains(uint64_t(offset), bytes)) ThrowRange(env, "the source range lies outside the mapping");
  if (!info[4].IsTypedArray() || info[4].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    ThrowTypeError(env, "out must be a Float32Array");
  Napi::Float32Array out = info[4].As<Napi::Float32Array>();
  if (int64_t(out.ElementLength()) != count)
    ThrowRange(env, "out has " + std::to_string(out.ElementLength()) + " elements, expected " + std::to_string(count));
  const uint8_t* src = mapping->data() + offset;
  auto* worker = new DequantizeWorker(env, std::move(mapping), src, source, count, out);
  return worker->Start();
}

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("dequantizeWeights", Napi::Function::New(env, DequantizeWeights, "dequantizeWeights"));
}

}  // namespace

WEIGHTMAP_REGISTER(dequantize_weights, Register);

}  // namespace weightmap
