// The JS side every loaded model shares (CRTP base of DecoderModel, GptModel, PhiModel, VitModel,
// BertEncoder): made only by the static load() (engine_worker.h StartLoad), dispose() / disposed /
// threads, and Live() for its own methods.
#pragma once

#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "napi/engine_worker.h"

namespace weightmap {

template <typename Derived, typename Model>
class ModelWrap : public Napi::ObjectWrap<Derived> {
 public:
  using Handle = ModelHandle<Model>;
  using Wrap = Napi::ObjectWrap<Derived>;

  explicit ModelWrap(const Napi::CallbackInfo& info) : Wrap(info) {
    handle_ = TakeState<Handle>(info, std::string(Derived::kName) + " is made by " + Derived::kName + ".load(spec, config, options)");
  }

 protected:
  // Defines and exports the class: the derived class's own properties plus load(), dispose(),
  // disposed and threads. `load` is the derived class's static load(spec, config, options).
  static void Define(Napi::Env env, Napi::Object exports, std::vector<typename Wrap::PropertyDescriptor> properties,
                     typename Wrap::StaticMethodCallback load) {
    properties.push_back(Wrap::StaticMethod("load", load));
    properties.push_back(Wrap::InstanceMethod("dispose", static_cast<typename Wrap::InstanceMethodCallback>(&ModelWrap::Dispose)));
    properties.push_back(Wrap::InstanceAccessor("disposed", static_cast<typename Wrap::InstanceGetterCallback>(&ModelWrap::Disposed), nullptr));
    properties.push_back(Wrap::InstanceAccessor("threads", static_cast<typename Wrap::InstanceGetterCallback>(&ModelWrap::Threads), nullptr));
    ExportClass(env, exports, Derived::kName, Wrap::DefineClass(env, Derived::kName, properties));
  }

  const std::shared_ptr<Handle>& Live(Napi::Env env) const {
    if (!handle_) throw DisposedError(env, std::string("the ") + Derived::kName);
    return handle_;
  }

  // What the derived class stops on dispose() (a running call of its own).
  void OnDispose() {}

  // Sessions made from it reject further calls with ERR_WEIGHTMAP_DISPOSED; running calls finish.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (handle_) {
      static_cast<Derived*>(this)->OnDispose();
      handle_->disposed = true;
      handle_.reset();
    }
    return info.Env().Undefined();
  }
  Napi::Value Disposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !handle_); }
  Napi::Value Threads(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), handle_ ? handle_->model->threads() : 0);
  }

  std::shared_ptr<Handle> handle_;
};

}  // namespace weightmap
