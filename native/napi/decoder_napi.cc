// JS classes DecoderModel and DecoderSession (binding.d.ts) over native/engines/decoder.h.
//
// Lifetimes: a JS object holds a shared_ptr to its native state and drops it on dispose(); every
// queued worker holds its own shared_ptr, so a running call keeps what it needs alive (and the
// mappings, through the model's WeightsSpec). One call at a time per session: a second eval
// while one runs is rejected with ERR_WEIGHTMAP_BUSY (lib/engines/decoder.ts queues calls, so
// users never see it). Different sessions and models run concurrently.
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engines/decoder.h"
#include "engines/decoder_batch.h"
#include "engines/weights_spec.h"
#include "kernels/kernels.h"
#include "napi/addon_data.h"
#include "napi/errors.h"
#include "napi/promise_worker.h"
#include "napi/register.h"
#include "napi/sampler_napi.h"
#include "napi/sampling_params.h"
#include "sampling/sampler.h"

namespace weightmap {
namespace decoder {

namespace {

struct ModelState {
  std::shared_ptr<const DecoderModel> model;
  std::atomic<bool> disposed{false};
};

struct SessionState {
  std::shared_ptr<ModelState> model;
  std::unique_ptr<DecoderSession> session;
  std::atomic<bool> abort{false};
  std::atomic<bool> busy{false};
};

Napi::Error DisposedError(Napi::Env env, const std::string& what) {
  return MakeError(env, "ERR_WEIGHTMAP_DISPOSED", what + " was disposed");
}

int64_t ReadInt(Napi::Object o, const char* key, int64_t lo, int64_t hi) {
  Napi::Env env = o.Env();
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) ThrowTypeError(env, std::string(key) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (std::floor(d) != d || d < static_cast<double>(lo) || d > static_cast<double>(hi))
    throw MakeError(env, "ERR_OUT_OF_RANGE",
                    std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int64_t>(d);
}

double ReadDouble(Napi::Object o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) ThrowTypeError(o.Env(), std::string(key) + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

bool ReadBool(Napi::Object o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsBoolean()) ThrowTypeError(o.Env(), std::string(key) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

// The DecoderConfig of lib/weights.ts.
DecoderConfig ParseConfig(Napi::Value value) {
  Napi::Env env = value.Env();
  if (!value.IsObject()) ThrowTypeError(env, "config must be an object");
  Napi::Object o = value.As<Napi::Object>();
  constexpr int64_t kMax = int64_t{1} << 31;
  DecoderConfig c;
  c.dim = ReadInt(o, "hiddenSize", 1, kMax);
  c.hidden = ReadInt(o, "intermediateSize", 1, kMax);
  c.n_layers = ReadInt(o, "numLayers", 1, 1 << 16);
  c.n_heads = ReadInt(o, "numHeads", 1, 1 << 16);
  c.n_kv_heads = ReadInt(o, "numKvHeads", 1, 1 << 16);
  c.head_dim = ReadInt(o, "headDim", 1, 1 << 16);
  c.vocab = ReadInt(o, "vocabSize", 1, kMax - 1);
  c.max_seq_len = ReadInt(o, "maxSeqLen", 1, kMax);
  c.eps = static_cast<float>(ReadDouble(o, "rmsNormEps"));
  c.theta = ReadDouble(o, "ropeTheta");
  Napi::Value pairing = o.Get("ropePairing");
  std::string p = pairing.IsString() ? pairing.As<Napi::String>().Utf8Value() : "";
  if (p != "half" && p != "interleaved") ThrowTypeError(env, "ropePairing must be 'half' or 'interleaved'");
  c.interleaved = p == "interleaved";
  c.tied = ReadBool(o, "tieWordEmbeddings");
  c.qk_norm = ReadBool(o, "qkNorm");
  Napi::Value bias = o.Get("qkvBias");
  c.qkv_bias = !bias.IsUndefined() && ReadBool(o, "qkvBias");
  Napi::Value freqs = o.Get("ropeFreqFactors");
  if (!freqs.IsUndefined()) {
    if (!freqs.IsArray()) ThrowTypeError(env, "ropeFreqFactors must be an array of numbers");
    Napi::Array a = freqs.As<Napi::Array>();
    if (a.Length() > (1u << 16)) ThrowTypeError(env, "ropeFreqFactors is too long");
    for (uint32_t i = 0; i < a.Length(); i++) {
      Napi::Value v = a.Get(i);
      if (!v.IsNumber()) ThrowTypeError(env, "ropeFreqFactors must be an array of numbers");
      c.rope_freqs.push_back(v.As<Napi::Number>().FloatValue());
    }
  }
  return c;
}

DecoderOptions ParseOptions(Napi::Value value) {
  DecoderOptions options;
  if (value.IsUndefined() || value.IsNull()) return options;
  Napi::Env env = value.Env();
  if (!value.IsObject()) ThrowTypeError(env, "options must be an object");
  Napi::Object o = value.As<Napi::Object>();
  if (!o.Get("threads").IsUndefined()) options.threads = static_cast<int>(ReadInt(o, "threads", 0, 1024));
  if (!o.Get("groupSize").IsUndefined()) options.group_size = static_cast<int>(ReadInt(o, "groupSize", 1, 4096));
  // The layer range of a pipeline stage (checked against the config by DecoderModel::Load).
  if (!o.Get("firstLayer").IsUndefined()) options.first_layer = ReadInt(o, "firstLayer", 0, 1 << 16);
  if (!o.Get("endLayer").IsUndefined()) options.end_layer = ReadInt(o, "endLayer", 1, 1 << 16);
  Napi::Value quant = o.Get("quant");
  if (!quant.IsUndefined()) {
    std::string q = quant.IsString() ? quant.As<Napi::String>().Utf8Value() : "";
    if (q == "q8_0") options.quant = WeightQuant::Q8;
    else if (q == "f32") options.quant = WeightQuant::F32;
    else if (q == "none") options.quant = WeightQuant::Keep;
    else ThrowTypeError(env, "quant must be 'q8_0', 'f32' or 'none'");
  }
  return options;
}

class LoadWorker : public PromiseWorker {
 public:
  LoadWorker(Napi::Env env, DecoderConfig config, std::shared_ptr<const WeightsSpec> spec, DecoderOptions options)
      : PromiseWorker(env, "weightmap:decoder-load"), config_(config), spec_(std::move(spec)), options_(options) {}

 protected:
  void Execute() override {
    try {
      model_ = DecoderModel::Load(config_, spec_, options_);
    } catch (const SpecError& e) {
      Fail(e.code(), e.what());
    } catch (const std::bad_alloc&) {
      Fail("ERR_WEIGHTMAP_OUT_OF_MEMORY", "not enough memory to prepare the weights");
    } catch (const std::exception& e) {
      Fail("ERR_WEIGHTMAP_NATIVE", e.what());
    }
  }
  Napi::Value Result(Napi::Env env) override {
    auto state = std::make_shared<ModelState>();
    state->model = std::move(model_);
    auto* hold = new std::shared_ptr<ModelState>(std::move(state));
    Napi::External<std::shared_ptr<ModelState>> handle = Napi::External<std::shared_ptr<ModelState>>::New(
        env, hold, [](Napi::Env, std::shared_ptr<ModelState>* p) { delete p; });
    return AddonData::Get(env)->classes.at("DecoderModel").New({handle});
  }

 private:
  DecoderConfig config_;
  std::shared_ptr<const WeightsSpec> spec_;
  DecoderOptions options_;
  std::shared_ptr<DecoderModel> model_;
};

// Samplers lent to a running step(): one worker at a time may use a Sampler (its generator state
// is not thread-safe), across every session and thread of the process.
std::mutex lent_mutex;
std::set<const Sampler*> lent_samplers;

// A call that holds sessions (and lends samplers) while it runs: Run() on the worker thread, with
// the engine's failures turned into coded rejections; Release() on the JS thread once it settles,
// whichever way.
class SessionCallWorker : public PromiseWorker {
 public:
  using PromiseWorker::PromiseWorker;

 protected:
  virtual void Run() = 0;
  virtual void Release() = 0;

  void Execute() override {
    try {
      Run();
    } catch (const EngineError& e) {
      Fail(e.code(), e.what());
    } catch (const std::bad_alloc&) {
      Fail("ERR_WEIGHTMAP_OUT_OF_MEMORY", "not enough memory for the activations of this batch");
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

// eval(): the forward pass, resolving to the logits. step(): the forward pass and, in the same
// worker, the choice of the next token with the caller's Sampler, resolving to its id.
// evalHidden(): the forward pass of a pipeline stage from hidden states (ids_ empty).
class EvalWorker : public SessionCallWorker {
 public:
  EvalWorker(Napi::Env env, std::shared_ptr<SessionState> state, std::vector<int32_t> ids, bool all_logits)
      : SessionCallWorker(env, "weightmap:decoder-eval"), state_(std::move(state)), ids_(std::move(ids)), all_(all_logits) {}
  EvalWorker(Napi::Env env, std::shared_ptr<SessionState> state, std::vector<float> hidden, bool all_logits)
      : SessionCallWorker(env, "weightmap:decoder-eval"), state_(std::move(state)), hidden_(std::move(hidden)), all_(all_logits) {}

  // Turns this into a step(): `sampler` belongs to `sampler_object`, which stays referenced (and
  // the sampler lent) until the worker settles.
  void SampleWith(Sampler* sampler, Napi::Object sampler_object, SamplingParams params) {
    sampler_ = sampler;
    sampler_ref_ = Napi::Persistent(sampler_object);
    params_ = std::move(params);
  }

 protected:
  void Run() override {
    DecoderSession& session = *state_->session;
    const int64_t vocab = state_->model->model->config().vocab;
    const int64_t dim = state_->model->model->config().dim;
    if (hidden_.empty()) {
      const int64_t n = static_cast<int64_t>(ids_.size());
      logits_.resize(static_cast<size_t>(session.OutputFloats(n, all_)));
      session.Eval(ids_.data(), n, all_, logits_.data(), state_->abort);
    } else {
      const int64_t n = static_cast<int64_t>(hidden_.size()) / dim;
      logits_.resize(static_cast<size_t>(session.OutputFloats(n, all_)));
      session.EvalHidden(hidden_.data(), n, all_, logits_.data(), state_->abort);
    }
    if (sampler_) {
      const std::vector<int32_t>& history = state_->session->tokens();
      token_ = sampler_->Sample(logits_.data(), static_cast<int32_t>(vocab), params_, history.data(),
                                static_cast<int32_t>(history.size()));
    }
  }
  Napi::Value Result(Napi::Env env) override {
    if (sampler_) return Napi::Number::New(env, token_);
    auto* data = new std::vector<float>(std::move(logits_));
    Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(
        env, data->data(), data->size() * sizeof(float), [](Napi::Env, void*, std::vector<float>* d) { delete d; }, data);
    return Napi::Float32Array::New(env, data->size(), buffer, 0);
  }
  void Release() override {
    state_->busy = false;
    if (sampler_) {
      std::lock_guard<std::mutex> lock(lent_mutex);
      lent_samplers.erase(sampler_);
    }
  }

 private:
  std::shared_ptr<SessionState> state_;
  std::vector<int32_t> ids_;
  std::vector<float> hidden_;  // [n, dim]
  bool all_;
  std::vector<float> logits_;
  Sampler* sampler_ = nullptr;
  Napi::ObjectReference sampler_ref_;
  SamplingParams params_;
  int32_t token_ = -1;
};

// stepBatch(): one BatchStep over several sessions, then each row's token drawn with its own
// Sampler and params, as step() draws it. Resolves to Int32Array [n]: the tokens, -1 for a row
// whose session was aborted during the step (its session keeps its position).
class StepBatchWorker : public SessionCallWorker {
 public:
  struct Row {
    std::shared_ptr<SessionState> state;
    int32_t id;
    Sampler* sampler;
    Napi::ObjectReference sampler_ref;  // keeps the JS Sampler alive while lent
    SamplingParams params;
  };
  StepBatchWorker(Napi::Env env, std::vector<Row> rows) : SessionCallWorker(env, "weightmap:decoder-step-batch"), rows_(std::move(rows)) {}

 protected:
  void Run() override {
    const int64_t n = static_cast<int64_t>(rows_.size());
    std::vector<DecoderSession*> sessions(n);
    std::vector<const std::atomic<bool>*> aborts(n);
    std::vector<int32_t> ids(n);
    for (int64_t i = 0; i < n; i++) {
      sessions[i] = rows_[i].state->session.get();
      aborts[i] = &rows_[i].state->abort;
      ids[i] = rows_[i].id;
    }
    const int64_t vocab = sessions[0]->model()->config().vocab;
    std::vector<float> logits(static_cast<size_t>(n * vocab));  // [n, vocab]
    const std::vector<bool> committed = BatchStep::Run(sessions.data(), ids.data(), n, aborts.data(), logits.data());
    tokens_.assign(n, -1);
    for (int64_t i = 0; i < n; i++) {
      if (!committed[i]) continue;
      const std::vector<int32_t>& history = sessions[i]->tokens();
      tokens_[i] = rows_[i].sampler->Sample(logits.data() + i * vocab, static_cast<int32_t>(vocab), rows_[i].params,
                                            history.data(), static_cast<int32_t>(history.size()));
    }
  }
  Napi::Value Result(Napi::Env env) override {
    Napi::Int32Array out = Napi::Int32Array::New(env, tokens_.size());
    for (size_t i = 0; i < tokens_.size(); i++) out[i] = tokens_[i];
    return out;
  }
  void Release() override {
    std::lock_guard<std::mutex> lock(lent_mutex);
    for (Row& row : rows_) {
      row.state->busy = false;
      lent_samplers.erase(row.sampler);
    }
  }

 private:
  std::vector<Row> rows_;
  std::vector<int32_t> tokens_;
};

}  // namespace

class DecoderSessionWrap : public Napi::ObjectWrap<DecoderSessionWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function ctor = DefineClass(env, "DecoderSession",
        {InstanceMethod<&DecoderSessionWrap::Eval>("eval"),
         InstanceMethod<&DecoderSessionWrap::Step>("step"),
         InstanceMethod<&DecoderSessionWrap::EvalHidden>("evalHidden"),
         InstanceMethod<&DecoderSessionWrap::Truncate>("truncate"),
         InstanceMethod<&DecoderSessionWrap::Abort>("abort"),
         InstanceMethod<&DecoderSessionWrap::Dispose>("dispose"),
         InstanceAccessor<&DecoderSessionWrap::Position>("position"),
         InstanceAccessor<&DecoderSessionWrap::ContextLength>("contextLength"),
         InstanceAccessor<&DecoderSessionWrap::CacheBytes>("cacheBytes"),
         InstanceAccessor<&DecoderSessionWrap::Busy>("busy"),
         InstanceAccessor<&DecoderSessionWrap::Disposed>("disposed")});
    AddonData::Get(env)->classes["DecoderSession"] = Napi::Persistent(ctor);
    exports.Set("DecoderSession", ctor);
  }

  explicit DecoderSessionWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DecoderSessionWrap>(info) {
    if (info.Length() != 1 || !info[0].IsExternal())
      ThrowTypeError(info.Env(), "DecoderSession is created by DecoderModel.createSession()");
    state_ = *info[0].As<Napi::External<std::shared_ptr<SessionState>>>().Data();
  }

  // The native state (null once disposed), for DecoderModel.stepBatch.
  const std::shared_ptr<SessionState>& state() const { return state_; }

 private:
  SessionState& Live(Napi::Env env) {
    if (!state_) throw DisposedError(env, "the DecoderSession");
    if (state_->model->disposed) throw DisposedError(env, "the DecoderModel of this session");
    return *state_;
  }

  // eval(ids: Int32Array, allLogits: boolean): Promise<Float32Array>
  Napi::Value Eval(const Napi::CallbackInfo& info) {
    const bool all = info.Length() > 1 && info[1].ToBoolean().Value();
    EvalWorker* worker = NewWorker(info, all);
    return worker->Start();
  }

  // evalHidden(hidden: Float32Array, allLogits: boolean): Promise<Float32Array>, for a model that
  // starts past layer 0 (a pipeline stage): hidden [n, hiddenSize] enters its first layer.
  Napi::Value EvalHidden(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    SessionState& s = Live(env);
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
      ThrowTypeError(env, "hidden must be a Float32Array");
    Napi::Float32Array hidden = info[0].As<Napi::Float32Array>();
    const size_t dim = static_cast<size_t>(s.model->model->config().dim);
    if (hidden.ElementLength() == 0 || hidden.ElementLength() % dim != 0)
      throw MakeError(env, "ERR_OUT_OF_RANGE", "hidden must hold whole rows of " + std::to_string(dim) + " floats");
    if (s.busy.exchange(true))
      throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "this session is already running a call; await it first");
    s.abort = false;
    std::vector<float> copy(hidden.Data(), hidden.Data() + hidden.ElementLength());
    const bool all = info.Length() > 1 && info[1].ToBoolean().Value();
    return (new EvalWorker(env, state_, std::move(copy), all))->Start();
  }

  // step(ids: Int32Array, sampler: Sampler, params?): Promise<number>: eval() of ids, then the next
  // token drawn from the last position's logits with the sequence's tokens as penalty history.
  Napi::Value Step(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Live(env);
    if (!state_->model->model->has_head())
      throw MakeError(env, "ERR_OUT_OF_RANGE", "step() needs the model's head; this model ends before the last layer");
    Sampler* sampler = info.Length() > 1 ? UnwrapSampler(info[1]) : nullptr;
    if (!sampler) ThrowTypeError(env, "step(ids, sampler, params): sampler must be a Sampler");
    SamplingParams params = ParseSamplingParams(env, info.Length() > 2 ? info[2] : env.Undefined());
    {
      std::lock_guard<std::mutex> lock(lent_mutex);
      if (lent_samplers.count(sampler))
        throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "this Sampler is in use by another step(); await it first");
    }
    EvalWorker* worker = NewWorker(info, false);
    {
      std::lock_guard<std::mutex> lock(lent_mutex);
      lent_samplers.insert(sampler);
    }
    worker->SampleWith(sampler, info[1].As<Napi::Object>(), std::move(params));
    return worker->Start();
  }

  // Checks the ids and the session, marks it busy and makes the worker (not yet queued).
  EvalWorker* NewWorker(const Napi::CallbackInfo& info, bool all_logits) {
    Napi::Env env = info.Env();
    SessionState& s = Live(env);
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(env, "ids must be an Int32Array");
    Napi::Int32Array ids = info[0].As<Napi::Int32Array>();
    if (ids.ElementLength() == 0) throw MakeError(env, "ERR_OUT_OF_RANGE", "eval needs at least one token");
    if (s.busy.exchange(true))
      throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "this session is already running a call; await it first");
    s.abort = false;  // cleared here, not in the worker, so an abort() right after eval() still counts
    std::vector<int32_t> copy(ids.Data(), ids.Data() + ids.ElementLength());
    return new EvalWorker(env, state_, std::move(copy), all_logits);
  }

  Napi::Value Truncate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    SessionState& s = Live(env);
    if (s.busy) throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "truncate() while a call runs on this session");
    if (info.Length() < 1 || !info[0].IsNumber()) ThrowTypeError(env, "truncate(n): n must be a number");
    const double n = info[0].As<Napi::Number>().DoubleValue();
    if (std::floor(n) != n || n < 0 || n > static_cast<double>(s.session->position()))
      throw MakeError(env, "ERR_OUT_OF_RANGE",
                      "truncate(n): n must be an integer in [0, " + std::to_string(s.session->position()) + "]");
    s.session->Truncate(static_cast<int64_t>(n));
    return env.Undefined();
  }

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
  Napi::Value Busy(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), state_ && state_->busy); }
  Napi::Value Disposed(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), !state_ || state_->model->disposed);
  }

  std::shared_ptr<SessionState> state_;
};

class DecoderModelWrap : public Napi::ObjectWrap<DecoderModelWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function ctor = DefineClass(env, "DecoderModel",
        {StaticMethod<&DecoderModelWrap::Load>("load"),
         InstanceMethod<&DecoderModelWrap::CreateSession>("createSession"),
         InstanceMethod<&DecoderModelWrap::StepBatch>("stepBatch"),
         InstanceMethod<&DecoderModelWrap::Dispose>("dispose"),
         InstanceAccessor<&DecoderModelWrap::LoadInfo>("loadInfo"),
         InstanceAccessor<&DecoderModelWrap::Disposed>("disposed")});
    AddonData::Get(env)->classes["DecoderModel"] = Napi::Persistent(ctor);
    exports.Set("DecoderModel", ctor);
  }

  explicit DecoderModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DecoderModelWrap>(info) {
    if (info.Length() != 1 || !info[0].IsExternal())
      ThrowTypeError(info.Env(), "DecoderModel is created by DecoderModel.load(spec, config, options)");
    state_ = *info[0].As<Napi::External<std::shared_ptr<ModelState>>>().Data();
  }

 private:
  // load(spec: { files, tensors }, config, options?): Promise<DecoderModel>. The views are checked
  // against their mappings here, synchronously (SpecError codes throw); checking them against the
  // config and preparing the weights runs in a worker.
  static Napi::Value Load(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2) ThrowTypeError(env, "load(spec, config, options): spec and config are required");
    DecoderConfig config = ParseConfig(info[1]);
    DecoderOptions options = ParseOptions(info.Length() > 2 ? info[2] : env.Undefined());
    std::shared_ptr<const WeightsSpec> spec;
    try {
      spec = WeightsSpec::FromValue(info[0]);
    } catch (const SpecError& e) {
      throw MakeError(env, e.code(), e.what());
    }
    auto* worker = new LoadWorker(env, config, std::move(spec), options);
    return worker->Start();
  }

  // createSession({ contextLength, kvCache? }): DecoderSession. The KV cache is reserved, not written.
  Napi::Value CreateSession(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!state_) throw DisposedError(env, "the DecoderModel");
    if (info.Length() < 1 || !info[0].IsObject()) ThrowTypeError(env, "createSession(options): options must be an object");
    Napi::Object options = info[0].As<Napi::Object>();
    const int64_t context = ReadInt(options, "contextLength", 1, state_->model->config().max_seq_len);
    KvType kv = state_->model->default_kv();
    Napi::Value kv_value = options.Get("kvCache");
    if (!kv_value.IsUndefined()) {
      const std::string name = kv_value.IsString() ? kv_value.As<Napi::String>().Utf8Value() : "";
      if (name == "f16") kv = KvType::F16;
      else if (name == "f32") kv = KvType::F32;
      else if (name == "q8_0") kv = KvType::Q8_0;
      else ThrowTypeError(env, "kvCache must be 'f16', 'f32' or 'q8_0'");
    }
    auto session = std::make_shared<SessionState>();
    session->model = state_;
    try {
      session->session = std::make_unique<DecoderSession>(state_->model, context, kv);
    } catch (const EngineError& e) {
      throw MakeError(env, e.code(), e.what());
    } catch (const std::bad_alloc&) {
      throw MakeError(env, "ERR_WEIGHTMAP_OUT_OF_MEMORY", "not enough memory for a KV cache of " + std::to_string(context) + " positions");
    }
    auto* hold = new std::shared_ptr<SessionState>(std::move(session));
    Napi::External<std::shared_ptr<SessionState>> handle = Napi::External<std::shared_ptr<SessionState>>::New(
        env, hold, [](Napi::Env, std::shared_ptr<SessionState>* p) { delete p; });
    return AddonData::Get(env)->classes.at("DecoderSession").New({handle});
  }

  // stepBatch(sessions: DecoderSession[], ids: Int32Array, samplers: Sampler[], params: (NativeSamplingParams | undefined)[]):
  // Promise<Int32Array>. Every session (of this model, idle, distinct) feeds ids[i] at its position.
  Napi::Value StepBatch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!state_) throw DisposedError(env, "the DecoderModel");
    if (!state_->model->has_head() || !state_->model->embeds())
      throw MakeError(env, "ERR_OUT_OF_RANGE", "stepBatch() needs the whole model; a pipeline stage steps alone");
    if (info.Length() < 4 || !info[0].IsArray() || !info[2].IsArray() || !info[3].IsArray())
      ThrowTypeError(env, "stepBatch(sessions, ids, samplers, params): sessions, samplers and params must be arrays");
    if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(env, "stepBatch: ids must be an Int32Array");
    Napi::Array sessions = info[0].As<Napi::Array>();
    Napi::Int32Array ids = info[1].As<Napi::Int32Array>();
    Napi::Array samplers = info[2].As<Napi::Array>();
    Napi::Array params = info[3].As<Napi::Array>();
    const uint32_t n = sessions.Length();
    if (n == 0) throw MakeError(env, "ERR_OUT_OF_RANGE", "stepBatch needs at least one session");
    if (ids.ElementLength() != n || samplers.Length() != n || params.Length() != n)
      ThrowTypeError(env, "stepBatch: sessions, ids, samplers and params must have the same length");
    Napi::Function session_class = AddonData::Get(env)->classes.at("DecoderSession").Value();
    std::vector<StepBatchWorker::Row> rows(n);
    std::set<const SessionState*> states;
    std::set<const Sampler*> seen;
    for (uint32_t i = 0; i < n; i++) {
      Napi::Value value = sessions.Get(i);
      if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(session_class))
        ThrowTypeError(env, "stepBatch: sessions[" + std::to_string(i) + "] is not a DecoderSession");
      const std::shared_ptr<SessionState>& state = DecoderSessionWrap::Unwrap(value.As<Napi::Object>())->state();
      if (!state) throw DisposedError(env, "the DecoderSession at sessions[" + std::to_string(i) + "]");
      if (state->model != state_)
        throw MakeError(env, "ERR_OUT_OF_RANGE", "stepBatch: sessions[" + std::to_string(i) + "] belongs to another model");
      if (!states.insert(state.get()).second)
        throw MakeError(env, "ERR_OUT_OF_RANGE", "stepBatch: sessions[" + std::to_string(i) + "] appears twice");
      Sampler* sampler = UnwrapSampler(samplers.Get(i));
      if (!sampler) ThrowTypeError(env, "stepBatch: samplers[" + std::to_string(i) + "] is not a Sampler");
      if (!seen.insert(sampler).second)
        throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "stepBatch: samplers[" + std::to_string(i) + "] serves two rows");
      rows[i].state = state;
      rows[i].id = ids[i];
      rows[i].sampler = sampler;
      rows[i].params = ParseSamplingParams(env, params.Get(i));
    }
    // Claim every session and sampler, or none.
    std::lock_guard<std::mutex> lock(lent_mutex);
    for (uint32_t i = 0; i < n; i++) {
      const bool busy = rows[i].state->busy.exchange(true);
      if (busy || lent_samplers.count(rows[i].sampler)) {
        for (uint32_t j = 0; j < i + (busy ? 0 : 1); j++) rows[j].state->busy = false;
        throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "stepBatch: " + std::string(busy ? "sessions" : "samplers") + "[" +
                                                       std::to_string(i) + "] is in use by another call; await it first");
      }
    }
    for (uint32_t i = 0; i < n; i++) {
      rows[i].state->abort = false;  // as eval() does: an abort() from now on counts
      lent_samplers.insert(rows[i].sampler);
      rows[i].sampler_ref = Napi::Persistent(samplers.Get(i).As<Napi::Object>());
    }
    return (new StepBatchWorker(env, std::move(rows)))->Start();
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (state_) {
      state_->disposed = true;
      state_.reset();
    }
    return info.Env().Undefined();
  }

  Napi::Value Disposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !state_); }

  // What preparing the weights cost: { loadMs, copiedBytes, converted, kept, threads, isa }.
  Napi::Value LoadInfo(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!state_) throw DisposedError(env, "the DecoderModel");
    const DecoderModel& m = *state_->model;
    Napi::Object o = Napi::Object::New(env);
    o.Set("loadMs", m.load_ms());
    o.Set("copiedBytes", static_cast<double>(m.cost().copied_bytes));
    o.Set("converted", m.cost().converted);
    Napi::Array kept = Napi::Array::New(env, m.cost().kept.size());
    for (size_t i = 0; i < m.cost().kept.size(); i++) kept.Set(static_cast<uint32_t>(i), m.cost().kept[i]);
    o.Set("kept", kept);
    o.Set("threads", m.threads());
    o.Set("isa", kernels::Active().isa);
    return o;
  }

  std::shared_ptr<ModelState> state_;
};

namespace {
void InitDecoder(Napi::Env env, Napi::Object exports) {
  DecoderModelWrap::Init(env, exports);
  DecoderSessionWrap::Init(env, exports);
}
}  // namespace

WEIGHTMAP_REGISTER(Decoder, InitDecoder);

}  // namespace decoder
}  // namespace weightmap
