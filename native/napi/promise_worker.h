// The base of every heavy native call: runs Execute() on libuv's thread pool and settles a
// Promise on the JS thread. Subclasses call Fail(code, message) from Execute() to reject with a
// coded error, and build their result in Result() back on the JS thread.
#pragma once

#include <napi.h>

#include <string>

#include "napi/errors.h"

namespace weightmap {

class PromiseWorker : public Napi::AsyncWorker {
 public:
  explicit PromiseWorker(Napi::Env env, const char* name = "weightmap")
      : Napi::AsyncWorker(env, name), deferred_(Napi::Promise::Deferred::New(env)) {}

  // Queues the worker and returns its promise. The worker deletes itself when settled.
  Napi::Promise Start() {
    Napi::Promise promise = deferred_.Promise();
    Queue();
    return promise;
  }

 protected:
  virtual Napi::Value Result(Napi::Env env) { return env.Undefined(); }

  void Fail(const std::string& code, const std::string& message) {
    code_ = code;
    SetError(message);
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    try {
      deferred_.Resolve(Result(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }

  void OnError(const Napi::Error& e) override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    deferred_.Reject(MakeError(env, code_.empty() ? "ERR_WEIGHTMAP_NATIVE" : code_, e.Message()).Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::string code_;
};

}  // namespace weightmap
