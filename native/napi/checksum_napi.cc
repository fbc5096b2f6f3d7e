// crc32(view, previous?, options?) -> Promise<number>: zlib's CRC-32 of a Uint8Array on libuv's
// thread pool (checksum/crc32.h), so verifying a large file keeps the event loop turning. The
// worker holds a reference to the view's ArrayBuffer until it settles, and with options.file (the
// MappedFile the view lies in) a reference to the mapping itself: closing the file detaches its
// buffer, which alone would let the pages go while the worker reads them. Options: impl 'auto' |
// 'table' | 'pclmul' (the environment's WEIGHTMAP_CRC=table, read at each call, forces the table
// walk as well) and threads (default: up to 4, one per physical core; pieces of >= 1 MiB).
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "checksum/crc32.h"
#include "mmap/mapping.h"
#include "napi/errors.h"
#include "napi/mapped_file.h"
#include "napi/promise_worker.h"
#include "napi/register.h"
#include "threadpool.h"

namespace weightmap {

namespace {

constexpr int kMaxThreads = 64;

Napi::Uint8Array ViewArg(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray()) ThrowTypeError(env, "view must be a Uint8Array or Buffer");
  const napi_typedarray_type type = info[0].As<Napi::TypedArray>().TypedArrayType();
  if (type != napi_uint8_array && type != napi_uint8_clamped_array)
    ThrowTypeError(env, "view must be a Uint8Array or Buffer");
  return info[0].As<Napi::Uint8Array>();
}

uint32_t PreviousArg(const Napi::CallbackInfo& info) {
  if (info.Length() < 2 || info[1].IsUndefined()) return 0;
  return uint32_t(IntArg(info, 1, "previous", 0, 0xFFFFFFFFll));
}

struct Options {
  checksum::Crc32Impl impl = checksum::Crc32Impl::Auto;
  int threads = 0;
  std::shared_ptr<Mapping> mapping;  // options.file's, when given
};

Options OptionsArg(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Options o;
  if (info.Length() >= 3 && !info[2].IsUndefined()) {
    if (!info[2].IsObject()) ThrowTypeError(env, "options must be an object");
    Napi::Object obj = info[2].As<Napi::Object>();
    Napi::Value impl = obj.Get("impl");
    if (!impl.IsUndefined()) {
      const std::string name = impl.IsString() ? impl.As<Napi::String>().Utf8Value() : std::string();
      if (name == "auto") o.impl = checksum::Crc32Impl::Auto;
      else if (name == "table") o.impl = checksum::Crc32Impl::Table;
      else if (name == "pclmul") o.impl = checksum::Crc32Impl::Pclmul;
      else ThrowTypeError(env, "options.impl must be 'auto', 'table' or 'pclmul'");
    }
    Napi::Value file = obj.Get("file");
    if (!file.IsUndefined()) o.mapping = MappedFile::FromValue(file);
    Napi::Value threads = obj.Get("threads");
    if (!threads.IsUndefined()) {
      if (!threads.IsNumber()) ThrowTypeError(env, "options.threads must be a number");
      const double d = threads.As<Napi::Number>().DoubleValue();
      if (!(d == std::floor(d)) || d < 1 || d > kMaxThreads)
        ThrowRange(env, "options.threads must be an integer in [1, " + std::to_string(kMaxThreads) + "]");
      o.threads = int(d);
    }
  }
  const char* forced = std::getenv("WEIGHTMAP_CRC");
  if (forced && std::strcmp(forced, "table") == 0) o.impl = checksum::Crc32Impl::Table;
  if (o.threads == 0) o.threads = std::min(4, std::max(1, ThreadPool::PhysicalCores()));
  return o;
}

class Crc32Worker : public PromiseWorker {
 public:
  Crc32Worker(Napi::Env env, Napi::Uint8Array view, uint32_t previous, Options options)
      : PromiseWorker(env, "weightmap:crc32"),
        data_(view.Data()),
        length_(view.ByteLength()),
        previous_(previous),
        options_(options),
        buffer_ref_(Napi::Persistent(static_cast<Napi::Object>(view.ArrayBuffer()))) {}

  void Execute() override {
    crc_ = checksum::Crc32Parallel(data_, length_, previous_, options_.threads, options_.impl);
  }

 protected:
  Napi::Value Result(Napi::Env env) override { return Napi::Number::New(env, double(crc_)); }

 private:
  const uint8_t* data_;
  size_t length_;
  uint32_t previous_;
  Options options_;
  uint32_t crc_ = 0;
  Napi::ObjectReference buffer_ref_;  // the bytes stay reachable while the worker reads them
};

Napi::Value Crc32(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Uint8Array view = ViewArg(info);
  const uint32_t previous = PreviousArg(info);
  const Options options = OptionsArg(info);
  if (options.mapping) {
    const uint8_t* begin = options.mapping->data();
    if (view.Data() < begin || view.Data() + view.ByteLength() > begin + options.mapping->size())
      ThrowRange(env, "view does not lie in options.file's mapping");
  }
  auto* worker = new Crc32Worker(env, view, previous, options);
  return worker->Start();
}

Napi::Value Crc32HasPclmul(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), checksum::Crc32HasPclmul());
}

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("crc32", Napi::Function::New(env, Crc32, "crc32"));
  exports.Set("crc32HasPclmul", Napi::Function::New(env, Crc32HasPclmul, "crc32HasPclmul"));
}

}  // namespace

WEIGHTMAP_REGISTER(checksum_crc32, Register);

}  // namespace weightmap
