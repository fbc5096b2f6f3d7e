// What every engine's N-API glue shares: the worker that runs an engine call and turns the plain
// C++ failures of native/engines (engine_error.h) into coded rejections, the handle a loaded model
// is held by, and the construction of a JS engine object around native state.
#pragma once

#include <napi.h>

#include <atomic>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "engines/engine_error.h"
#include "napi/addon_data.h"
#include "napi/engine_args.h"
#include "napi/errors.h"
#include "napi/promise_worker.h"

namespace weightmap {

// A call into an engine: Run() on the worker thread, its exceptions turned into coded rejections
// (EngineError and SpecError: their code; std::out_of_range: ERR_OUT_OF_RANGE; no memory:
// ERR_WEIGHTMAP_OUT_OF_MEMORY); Release() on the JS thread once it settles, whichever way, before
// the promise settles (so a session is free again when its caller resumes).
class EngineWorker : public PromiseWorker {
 public:
  using PromiseWorker::PromiseWorker;

 protected:
  virtual void Run() = 0;
  virtual void Release() {}

  void Execute() override {
    try {
      Run();
    } catch (const EngineError& e) {
      Fail(e.code(), e.what());
    } catch (const std::out_of_range& e) {
      Fail("ERR_OUT_OF_RANGE", e.what());
    } catch (const std::bad_alloc&) {
      Fail("ERR_WEIGHTMAP_OUT_OF_MEMORY", "not enough memory for this call");
    } catch (const std::exception& e) {
      Fail("ERR_WEIGHTMAP_NATIVE", e.what());
    }
  }
  void OnOK() override {
    Release();
    PromiseWorker::OnOK();
  }
  void OnError(const Napi::Error& e) override {
    Release();
    PromiseWorker::OnError(e);
  }
};

// A loaded model as its JS object and its sessions hold it: dispose() on the JS side marks it, so
// that its sessions refuse further calls (ERR_WEIGHTMAP_DISPOSED); calls already running keep it.
template <typename Model>
struct ModelHandle {
  explicit ModelHandle(std::shared_ptr<const Model> m) : model(std::move(m)) {}
  std::shared_ptr<const Model> model;
  std::atomic<bool> disposed{false};
};

// A new instance of the registered class `name` around `state` (its constructor takes it back with
// TakeState). Engine objects are made only this way, never by `new` from JS.
template <typename T>
Napi::Object NewWithState(Napi::Env env, const char* name, std::shared_ptr<T> state) {
  auto* hold = new std::shared_ptr<T>(std::move(state));
  auto handle = Napi::External<std::shared_ptr<T>>::New(env, hold, [](Napi::Env, std::shared_ptr<T>* p) { delete p; });
  return AddonData::Get(env)->classes.at(name).New({handle});
}

template <typename T>
std::shared_ptr<T> TakeState(const Napi::CallbackInfo& info, const std::string& how) {
  if (info.Length() != 1 || !info[0].IsExternal()) ThrowTypeError(info.Env(), how);
  return *info[0].As<Napi::External<std::shared_ptr<T>>>().Data();
}

// Loads a model off the JS thread: resolves to a new `class_name` around its ModelHandle.
template <typename Model, typename LoadFn>
class LoadWorker : public EngineWorker {
 public:
  LoadWorker(Napi::Env env, const char* class_name, LoadFn load)
      : EngineWorker(env, "weightmap:load"), class_name_(class_name), load_(std::move(load)) {}

 protected:
  void Run() override { model_ = load_(); }
  Napi::Value Result(Napi::Env env) override {
    return NewWithState(env, class_name_, std::make_shared<ModelHandle<Model>>(std::move(model_)));
  }

 private:
  const char* class_name_;
  LoadFn load_;
  std::shared_ptr<const Model> model_;
};

// The one loading idiom: `static load(spec, config, options?): Promise<Model>`. `load` runs in the
// worker; what it needs from JS must be read before (the spec is checked against its mappings
// there too, synchronously).
template <typename Model, typename LoadFn>
Napi::Promise StartLoad(Napi::Env env, const char* class_name, LoadFn load) {
  return (new LoadWorker<Model, LoadFn>(env, class_name, std::move(load)))->Start();
}

// Registers a class under `name` (AddonData: NewWithState finds it there) and exports it.
inline void ExportClass(Napi::Env env, Napi::Object exports, const char* name, Napi::Function ctor) {
  AddonData::Get(env)->classes[name] = Napi::Persistent(ctor);
  exports.Set(name, ctor);
}

inline Napi::Error DisposedError(Napi::Env env, const std::string& what) {
  return MakeError(env, "ERR_WEIGHTMAP_DISPOSED", what + " was disposed");
}

// A coded JS error for a failure thrown while a JS call runs (outside a worker).
[[noreturn]] inline void ThrowEngineFailure(Napi::Env env, const std::exception& e) {
  if (auto* engine = dynamic_cast<const EngineError*>(&e)) throw MakeError(env, engine->code(), e.what());
  if (dynamic_cast<const std::out_of_range*>(&e)) throw MakeError(env, "ERR_OUT_OF_RANGE", e.what());
  if (dynamic_cast<const std::bad_alloc*>(&e)) throw MakeError(env, "ERR_WEIGHTMAP_OUT_OF_MEMORY", "out of memory");
  throw MakeError(env, "ERR_WEIGHTMAP_NATIVE", e.what());
}

// load()'s first argument, the weights description, as the plain C++ WeightsSpec; a bad layout
// throws its coded JS error (a SpecError is an EngineError).
inline std::shared_ptr<const WeightsSpec> LoadSpecArgument(const Napi::CallbackInfo& info) {
  try {
    return WeightsSpecFromValue(info.Length() > 0 ? info[0] : info.Env().Undefined());
  } catch (const SpecError& e) {
    ThrowEngineFailure(info.Env(), e);
  }
}

}  // namespace weightmap
