// The one JS session class of every language engine (decoder, gpt, phi), as a template over the
// engine's Traits: eval / step / truncate / abort / dispose, position / contextLength / cacheBytes / allocatedCacheBytes /
// busy / disposed / tokens, one call at a time per session (ERR_WEIGHTMAP_BUSY), the Sampler lent
// through the process-wide registry of lent_sampler.h, the token history kept by the native session.
//
// Lifetimes: the JS object holds a shared_ptr to its SessionState and drops it on dispose(); every
// worker holds its own, so a running call keeps what it needs alive (and the mappings, through the
// model's WeightsSpec). Different sessions and models run concurrently.
//
// Traits:
//   using Model; using Session;                       the engine's classes
//   static constexpr const char* kName;               the JS class name ("GptSession")
//   static int64_t RowWidth(const Session&);           floats per input row of eval(Float32Array), 0: ids only
//   static constexpr bool kPrefix;                     whether eval takes a bidirectional prefix
//   static constexpr bool kBidirectionalRows;          whether eval's rows may attend to each other
//   static int64_t Vocab(const Session&);
//   static const char* CannotStep(const Session&);      why step() cannot run, or nullptr
//   static int64_t OutputFloats(const Session&, const EvalInput&);
//   static void Eval(Session&, const EvalInput&, float* out, const std::atomic<bool>& abort);
// Session: position(), context_length(), cache_bytes(), allocated_cache_bytes(), tokens(), Truncate(n).
#pragma once

#include <napi.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "napi/engine_worker.h"
#include "napi/errors.h"
#include "napi/lent_sampler.h"
#include "napi/output_buffers.h"

namespace weightmap {

// Steps: every row's, each bitwise what a one-token call at its position gives (engines whose Traits::kSteps).
enum class LogitsRows { None, Last, All, Steps };

// One eval() or step() call's input, copied on the JS thread.
struct EvalInput {
  std::vector<int32_t> ids;  // [n] token ids; with rows, the ids that name them in tokens() (or empty)
  std::vector<float> rows;   // [n, RowWidth] input rows instead of token ids (or empty)
  int64_t n = 0;
  LogitsRows logits = LogitsRows::Last;
  int64_t prefix = 0;  // positions [0, prefix) attend to each other bidirectionally
  bool bidirectional = false;  // the call's rows attend to each other (Gemma 3's image tokens)
  bool has_rows() const { return !rows.empty(); }
  // Rows of logits the call returns.
  int64_t logit_rows() const { return logits == LogitsRows::All || logits == LogitsRows::Steps ? n : logits == LogitsRows::Last ? 1 : 0; }
};

template <typename Traits>
struct SessionState {
  std::shared_ptr<ModelHandle<typename Traits::Model>> model;
  std::unique_ptr<typename Traits::Session> session;
  std::atomic<bool> abort{false};
  std::atomic<bool> busy{false};
};

// eval(): the forward pass, resolving to its output. step(): the forward pass and, in the same
// worker, the next token drawn by the lent Sampler with the session's tokens as the history.
template <typename Traits>
class EvalWorker : public EngineWorker {
 public:
  EvalWorker(Napi::Env env, std::shared_ptr<SessionState<Traits>> state, EvalInput input, std::unique_ptr<LentSampler> lent)
      : EngineWorker(env, "weightmap:session-eval"), state_(std::move(state)), input_(std::move(input)), lent_(std::move(lent)) {}
  ~EvalWorker() override { GiveOutputBuffer(std::move(out_)); }  // step(): the logits stayed here

 protected:
  void Run() override {
    typename Traits::Session& session = *state_->session;
    out_ = TakeOutputBuffer(static_cast<size_t>(Traits::OutputFloats(session, input_)));
    Traits::Eval(session, input_, out_.data(), state_->abort);
    if (lent_) {
      const std::vector<int32_t>& history = session.tokens();
      token_ = lent_->Sample(out_.data(), static_cast<int32_t>(Traits::Vocab(session)), history.data(),
                             static_cast<int32_t>(history.size()));
    }
  }
  Napi::Value Result(Napi::Env env) override {
    if (stepped_) return Napi::Number::New(env, token_);
    auto* data = new std::vector<float>(std::move(out_));
    Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(
        env, data->data(), data->size() * sizeof(float),
        [](Napi::Env, void*, std::vector<float>* d) {
          GiveOutputBuffer(std::move(*d));
          delete d;
        },
        data);
    return Napi::Float32Array::New(env, data->size(), buffer, 0);
  }
  // The session and the sampler are free again before the promise settles.
  void Release() override {
    state_->busy = false;
    stepped_ = lent_ != nullptr;
    lent_.reset();
  }

 private:
  std::shared_ptr<SessionState<Traits>> state_;
  EvalInput input_;
  std::unique_ptr<LentSampler> lent_;
  std::vector<float> out_;
  bool stepped_ = false;
  int32_t token_ = -1;
};

template <typename Traits>
class SessionWrap : public Napi::ObjectWrap<SessionWrap<Traits>> {
 public:
  using State = SessionState<Traits>;
  using Wrap = Napi::ObjectWrap<SessionWrap<Traits>>;

  static void Init(Napi::Env env, Napi::Object exports) {
    ExportClass(env, exports, Traits::kName,
                Wrap::DefineClass(env, Traits::kName,
                                  {Wrap::template InstanceMethod<&SessionWrap::Eval>("eval"),
                                   Wrap::template InstanceMethod<&SessionWrap::Step>("step"),
                                   Wrap::template InstanceMethod<&SessionWrap::Truncate>("truncate"),
                                   Wrap::template InstanceMethod<&SessionWrap::Abort>("abort"),
                                   Wrap::template InstanceMethod<&SessionWrap::Dispose>("dispose"),
                                   Wrap::template InstanceAccessor<&SessionWrap::Position>("position"),
                                   Wrap::template InstanceAccessor<&SessionWrap::ContextLength>("contextLength"),
                                   Wrap::template InstanceAccessor<&SessionWrap::CacheBytes>("cacheBytes"),
                                   Wrap::template InstanceAccessor<&SessionWrap::AllocatedCacheBytes>("allocatedCacheBytes"),
                                   Wrap::template InstanceAccessor<&SessionWrap::Tokens>("tokens"),
                                   Wrap::template InstanceAccessor<&SessionWrap::Busy>("busy"),
                                   Wrap::template InstanceAccessor<&SessionWrap::Disposed>("disposed")}));
  }

  // A new JS session of the model behind `model` (its model's createSession()).
  static Napi::Object New(Napi::Env env, std::shared_ptr<ModelHandle<typename Traits::Model>> model,
                          std::unique_ptr<typename Traits::Session> session) {
    auto state = std::make_shared<State>();
    state->model = std::move(model);
    state->session = std::move(session);
    return NewWithState(env, Traits::kName, std::move(state));
  }

  explicit SessionWrap(const Napi::CallbackInfo& info) : Wrap(info) {
    state_ = TakeState<State>(info, std::string(Traits::kName) + " is made by its model's createSession()");
  }

  // The native state (null once disposed), for calls over several sessions (stepBatch).
  const std::shared_ptr<State>& state() const { return state_; }

  // The live state of `value`, a session of this class, or a TypeError / ERR_WEIGHTMAP_DISPOSED naming `what`.
  static std::shared_ptr<State> LiveState(Napi::Env env, Napi::Value value, const std::string& what) {
    Napi::Function ctor = AddonData::Get(env)->classes.at(Traits::kName).Value();
    if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(ctor)) ThrowTypeError(env, what + " is not a " + Traits::kName);
    const std::shared_ptr<State>& state = SessionWrap::Unwrap(value.As<Napi::Object>())->state_;
    if (!state || state->model->disposed) throw DisposedError(env, what);
    return state;
  }

 private:
  State& Live(Napi::Env env) {
    if (!state_) throw DisposedError(env, std::string("the ") + Traits::kName);
    if (state_->model->disposed) throw DisposedError(env, std::string("the model of this ") + Traits::kName);
    return *state_;
  }

  // Live and idle: claims the session for a call (the worker's Release frees it).
  State& Claim(Napi::Env env, const char* what) {
    State& s = Live(env);
    if (s.busy.exchange(true)) throw MakeError(env, "ERR_WEIGHTMAP_BUSY", std::string(what) + " while a call runs on this session");
    s.abort = false;  // cleared here, not in the worker, so an abort() right after the call counts
    return s;
  }

  static bool IsTyped(const Napi::Value& v, napi_typedarray_type type) {
    return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == type;
  }

  // eval(input: Int32Array | Float32Array [n, rowWidth], logits?: 'none' | 'last' | 'all' | 'steps',
  //      options?: { prefix?: number, ids?: Int32Array, bidirectional?: boolean })
  EvalInput ReadEvalInput(const Napi::CallbackInfo& info, const State& s) {
    Napi::Env env = info.Env();
    EvalInput in;
    const int64_t width = Traits::RowWidth(*s.session);
    if (info.Length() > 0 && IsTyped(info[0], napi_int32_array)) {
      Napi::Int32Array a = info[0].As<Napi::Int32Array>();
      in.ids.assign(a.Data(), a.Data() + a.ElementLength());
      in.n = static_cast<int64_t>(in.ids.size());
    } else if (width > 0 && info.Length() > 0 && IsTyped(info[0], napi_float32_array)) {
      Napi::Float32Array a = info[0].As<Napi::Float32Array>();
      if (a.ElementLength() % width != 0)
        throw MakeError(env, "ERR_OUT_OF_RANGE", "eval(rows): rows must hold whole rows of " + std::to_string(width) + " floats");
      in.rows.assign(a.Data(), a.Data() + a.ElementLength());
      in.n = static_cast<int64_t>(in.rows.size()) / width;
    } else {
      ThrowTypeError(env, width > 0 ? "eval(input): input must be an Int32Array of ids or a Float32Array of rows"
                                    : "eval(ids): ids must be an Int32Array");
    }
    if (in.n == 0) throw MakeError(env, "ERR_OUT_OF_RANGE", "eval(input): input is empty");
    if (info.Length() > 1 && !info[1].IsUndefined()) {
      const std::string which = info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
      if (which == "none") in.logits = LogitsRows::None;
      else if (which == "all") in.logits = LogitsRows::All;
      else if (which == "steps" && Traits::kSteps) in.logits = LogitsRows::Steps;
      else if (which != "last")
        ThrowTypeError(env, Traits::kSteps ? "eval(input, logits): logits must be 'none', 'last', 'all' or 'steps'"
                                           : "eval(input, logits): logits must be 'none', 'last' or 'all'");
    }
    Napi::Object options = OptionsObject(env, info.Length() > 2 ? info[2] : env.Undefined(), "eval options");
    if (!options.Get("prefix").IsUndefined()) {
      if (!Traits::kPrefix) ThrowTypeError(env, std::string(Traits::kName) + " has no bidirectional prefix");
      Napi::Value p = options.Get("prefix");
      const double prefix = p.IsNumber() ? p.As<Napi::Number>().DoubleValue() : -1;
      if (!(prefix >= 0) || prefix > 1e9 || prefix != static_cast<double>(static_cast<int64_t>(prefix)))
        ThrowTypeError(env, "eval options.prefix must be a non-negative integer");
      in.prefix = static_cast<int64_t>(prefix);
    }
    Napi::Value bidirectional = options.Get("bidirectional");
    if (!bidirectional.IsUndefined()) {
      if (!bidirectional.IsBoolean()) ThrowTypeError(env, "eval options.bidirectional must be a boolean");
      in.bidirectional = bidirectional.As<Napi::Boolean>().Value();
      if (in.bidirectional && !Traits::kBidirectionalRows) ThrowTypeError(env, std::string(Traits::kName) + " has no bidirectional rows");
      if (in.bidirectional && !in.has_rows()) ThrowTypeError(env, "eval options.bidirectional applies to input rows, not token ids");
    }
    Napi::Value names = options.Get("ids");
    if (!names.IsUndefined()) {
      if (!in.has_rows() || !IsTyped(names, napi_int32_array) || names.As<Napi::Int32Array>().ElementLength() != static_cast<size_t>(in.n))
        ThrowTypeError(env, "eval options.ids names the input rows: an Int32Array of one id per row");
      Napi::Int32Array a = names.As<Napi::Int32Array>();
      in.ids.assign(a.Data(), a.Data() + a.ElementLength());
    }
    return in;
  }

  Napi::Value Eval(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    EvalInput in = ReadEvalInput(info, Live(env));
    Claim(env, "eval()");
    return (new EvalWorker<Traits>(env, state_, std::move(in), nullptr))->Start();
  }

  // step(ids: Int32Array, sampler: Sampler, params?, allowedTokens?: Uint32Array): Promise<number>:
  // eval() of ids, then the next token drawn in the same worker from the last position's logits,
  // with the session's tokens (positions 0..position, the new ones included) as the penalty
  // history; params read once per Sampler and object (BoundParams), allowedTokens this step's.
  Napi::Value Step(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (const char* why = Traits::CannotStep(*Live(env).session)) throw MakeError(env, "ERR_OUT_OF_RANGE", why);
    if (info.Length() < 1 || !IsTyped(info[0], napi_int32_array)) ThrowTypeError(env, "step(ids, sampler, params): ids must be an Int32Array");
    Napi::Int32Array a = info[0].As<Napi::Int32Array>();
    if (a.ElementLength() == 0) throw MakeError(env, "ERR_OUT_OF_RANGE", "step(ids): ids is empty");
    EvalInput in;
    in.ids.assign(a.Data(), a.Data() + a.ElementLength());
    in.n = static_cast<int64_t>(in.ids.size());
    auto arg = [&](size_t i) { return info.Length() > i ? info[i] : env.Undefined(); };
    auto lent = std::make_unique<LentSampler>(env, arg(1), arg(2), arg(3), "step(ids, sampler, params): sampler");
    Claim(env, "step()");
    return (new EvalWorker<Traits>(env, state_, std::move(in), std::move(lent)))->Start();
  }

  // truncate(n): forgets every position from n on (0 <= n <= position).
  Napi::Value Truncate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    State& s = Live(env);
    if (s.busy) throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "truncate() while a call runs on this session");
    const int64_t position = s.session->position();
    if (info.Length() < 1 || !info[0].IsNumber()) ThrowTypeError(env, "truncate(n): n must be a number");
    const double n = info[0].As<Napi::Number>().DoubleValue();
    if (!(n >= 0) || n > static_cast<double>(position) || n != static_cast<double>(static_cast<int64_t>(n)))
      throw MakeError(env, "ERR_OUT_OF_RANGE", "truncate(n): n must be an integer in [0, " + std::to_string(position) + "]");
    s.session->Truncate(static_cast<int64_t>(n));
    return env.Undefined();
  }

  // Makes the running (or next) call reject with ABORT_ERR at its next layer.
  Napi::Value Abort(const Napi::CallbackInfo& info) {
    if (state_) state_->abort = true;
    return info.Env().Undefined();
  }

  // Drops this handle's state; a running call stops at its next layer and frees it when done.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (state_) {
      state_->abort = true;
      state_.reset();
    }
    return info.Env().Undefined();
  }

  Napi::Value Position(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? static_cast<double>(state_->session->position()) : 0);
  }
  Napi::Value ContextLength(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? static_cast<double>(state_->session->context_length()) : 0);
  }
  Napi::Value CacheBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? static_cast<double>(state_->session->cache_bytes()) : 0);
  }
  Napi::Value AllocatedCacheBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? static_cast<double>(state_->session->allocated_cache_bytes()) : 0);
  }
  // A copy of the ids at positions [0, position) (ERR_WEIGHTMAP_BUSY while a call changes them).
  Napi::Value Tokens(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!state_) return Napi::Int32Array::New(env, 0);
    if (state_->busy) throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "tokens while a call runs on this session");
    const std::vector<int32_t>& tokens = state_->session->tokens();
    Napi::Int32Array out = Napi::Int32Array::New(env, tokens.size());
    std::copy(tokens.begin(), tokens.end(), out.Data());
    return out;
  }
  Napi::Value Busy(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), state_ && state_->busy); }
  Napi::Value Disposed(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), !state_ || state_->model->disposed);
  }

  std::shared_ptr<State> state_;
};

}  // namespace weightmap
