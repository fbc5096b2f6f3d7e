// prefaultGgufWeights(file: MappedFile) -> Promise<number>: mmap/early_prefault.h on libuv's thread
// pool; the worker holds the mapping until it is done, whatever happens to the MappedFile.
#include <napi.h>

#include <memory>

#include "mmap/early_prefault.h"
#include "napi/mapped_file.h"
#include "napi/promise_worker.h"
#include "napi/register.h"

namespace weightmap {

namespace {

class PrefaultWorker : public PromiseWorker {
 public:
  PrefaultWorker(Napi::Env env, std::shared_ptr<Mapping> mapping)
      : PromiseWorker(env, "weightmap:prefaultGgufWeights"), mapping_(std::move(mapping)) {}

 protected:
  void Execute() override { bytes_ = PrefaultGgufWeights(*mapping_); }
  Napi::Value Result(Napi::Env env) override { return Napi::Number::New(env, double(bytes_)); }

 private:
  std::shared_ptr<Mapping> mapping_;
  uint64_t bytes_ = 0;
};

Napi::Value PrefaultGgufWeightsJs(const Napi::CallbackInfo& info) {
  return (new PrefaultWorker(info.Env(), MappedFile::FromValue(info[0])))->Start();
}

void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("prefaultGgufWeights", Napi::Function::New(env, PrefaultGgufWeightsJs, "prefaultGgufWeights"));
}

}  // namespace

WEIGHTMAP_REGISTER(Prefault, Init);

}  // namespace weightmap
