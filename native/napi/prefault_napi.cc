// prefaultGgufWeights(file) and prefaultWeightSpans(file, streamed, partial) -> Promise<number>:
// mmap/early_prefault.h on libuv's thread pool; the worker holds the mapping until it is done,
// whatever happens to the MappedFile.
#include <napi.h>

#include <memory>
#include <utility>
#include <vector>

#include "mmap/early_prefault.h"
#include "napi/errors.h"
#include "napi/mapped_file.h"
#include "napi/promise_worker.h"
#include "napi/register.h"

namespace weightmap {

namespace {

// Spans given: those; none: the GGUF header's.
class PrefaultWorker : public PromiseWorker {
 public:
  PrefaultWorker(Napi::Env env, std::shared_ptr<Mapping> mapping, bool gguf, std::vector<ByteSpan> streamed = {},
                 std::vector<ByteSpan> partial = {})
      : PromiseWorker(env, "weightmap:prefault"),
        mapping_(std::move(mapping)),
        gguf_(gguf),
        streamed_(std::move(streamed)),
        partial_(std::move(partial)) {}

 protected:
  void Execute() override { bytes_ = gguf_ ? PrefaultGgufWeights(*mapping_) : PrefaultStreamed(*mapping_, streamed_, partial_); }
  Napi::Value Result(Napi::Env env) override { return Napi::Number::New(env, double(bytes_)); }

 private:
  std::shared_ptr<Mapping> mapping_;
  bool gguf_;
  std::vector<ByteSpan> streamed_, partial_;
  uint64_t bytes_ = 0;
};

Napi::Value PrefaultGgufWeightsJs(const Napi::CallbackInfo& info) {
  return (new PrefaultWorker(info.Env(), MappedFile::FromValue(info[0]), true))->Start();
}

// [begin, end, begin, end, ...] byte offsets, each a non-negative integer.
std::vector<ByteSpan> SpansArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsArray()) ThrowTypeError(env, std::string(name) + " must be an array of [begin, end) offsets");
  Napi::Array a = info[i].As<Napi::Array>();
  if (a.Length() % 2 != 0) ThrowTypeError(env, std::string(name) + " must hold begin, end pairs");
  std::vector<ByteSpan> spans;
  for (uint32_t k = 0; k < a.Length(); k += 2) {
    const Napi::Value b = a.Get(k), e = a.Get(k + 1);
    if (!b.IsNumber() || !e.IsNumber() || b.As<Napi::Number>().DoubleValue() < 0 || e.As<Napi::Number>().DoubleValue() < 0)
      ThrowTypeError(env, std::string(name) + " must hold non-negative offsets");
    spans.emplace_back(uint64_t(b.As<Napi::Number>().DoubleValue()), uint64_t(e.As<Napi::Number>().DoubleValue()));
  }
  return spans;
}

Napi::Value PrefaultWeightSpansJs(const Napi::CallbackInfo& info) {
  std::shared_ptr<Mapping> mapping = MappedFile::FromValue(info[0]);
  return (new PrefaultWorker(info.Env(), std::move(mapping), false, SpansArg(info, 1, "streamed"), SpansArg(info, 2, "partial")))->Start();
}

void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("prefaultGgufWeights", Napi::Function::New(env, PrefaultGgufWeightsJs, "prefaultGgufWeights"));
  exports.Set("prefaultWeightSpans", Napi::Function::New(env, PrefaultWeightSpansJs, "prefaultWeightSpans"));
}

}  // namespace

WEIGHTMAP_REGISTER(Prefault, Init);

}  // namespace weightmap
