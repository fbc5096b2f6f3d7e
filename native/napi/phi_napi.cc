// JS classes PhiModel (Moondream's text weights + thread pool) and PhiSession (one sequence and
// its KV cache) over native/engines/phi.h. eval() runs on libuv's pool and returns a Promise.
#include <napi.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "engines/phi.h"
#include "engines/weights_spec.h"
#include "napi/errors.h"
#include "napi/lent_sampler.h"
#include "napi/promise_worker.h"
#include "napi/register.h"
#include "napi/spec_views.h"
#include "threadpool.h"

namespace weightmap {

namespace {

struct PhiCore {
  std::shared_ptr<const WeightsSpec> spec;  // keeps the mappings behind the model alive
  std::shared_ptr<const engines::PhiModel> model;
  std::unique_ptr<ThreadPool> pool;
};

// Canonical names of lib/architectures/moondream.ts; text matrices are [out,in].
std::shared_ptr<PhiCore> LoadCore(std::shared_ptr<const WeightsSpec> spec, const engines::PhiConfig& c, int threads) {
  const WeightsSpec& s = *spec;
  const int64_t d = c.dim, f = c.ffn, V = c.vocab;
  engines::PhiWeightsHalf w;
  w.wte = SpecF16(s, "model.text.wte", {V, d});
  for (int64_t l = 0; l < c.n_layers; l++) {
    const std::string p = "model.text.blocks." + std::to_string(l) + ".";
    engines::PhiLayerHalf L;
    L.ln_w = SpecF16(s, p + "ln.weight", {d});
    L.ln_b = SpecF16(s, p + "ln.bias", {d});
    L.qkv_w = SpecF16(s, p + "attn.qkv.weight", {3 * d, d});
    L.qkv_b = SpecF16(s, p + "attn.qkv.bias", {3 * d});
    L.proj_w = SpecF16(s, p + "attn.proj.weight", {d, d});
    L.proj_b = SpecF16(s, p + "attn.proj.bias", {d});
    L.fc1_w = SpecF16(s, p + "mlp.fc1.weight", {f, d});
    L.fc1_b = SpecF16(s, p + "mlp.fc1.bias", {f});
    L.fc2_w = SpecF16(s, p + "mlp.fc2.weight", {d, f});
    L.fc2_b = SpecF16(s, p + "mlp.fc2.bias", {d});
    w.layers.push_back(L);
  }
  w.post_ln_w = SpecF16(s, "model.text.post_ln.weight", {d});
  w.post_ln_b = SpecF16(s, "model.text.post_ln.bias", {d});
  w.lm_w = SpecF16(s, "model.text.lm_head.weight", {V, d});
  w.lm_b = SpecF16(s, "model.text.lm_head.bias", {V});
  auto core = std::make_shared<PhiCore>();
  core->model = std::make_shared<engines::PhiModel>(c, w);
  core->spec = std::move(spec);
  core->pool = std::make_unique<ThreadPool>(threads);
  return core;
}

class PhiModelWrap : public Napi::ObjectWrap<PhiModelWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    exports.Set("PhiModel", DefineClass(env, "PhiModel",
                                        {InstanceAccessor<&PhiModelWrap::Threads>("threads"),
                                         InstanceMethod<&PhiModelWrap::Embed>("embed"),
                                         InstanceMethod<&PhiModelWrap::Dispose>("dispose")}));
  }

  // new PhiModel(spec, config, options?)
  explicit PhiModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<PhiModelWrap>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[1].IsObject()) ThrowTypeError(env, "PhiModel(spec, config, options?): config must be an object");
    Napi::Object cfg = info[1].As<Napi::Object>();
    engines::PhiConfig c;
    c.dim = ConfigInt(cfg, "hiddenSize");
    c.n_layers = ConfigInt(cfg, "numLayers");
    c.n_heads = ConfigInt(cfg, "numHeads");
    c.head_dim = ConfigInt(cfg, "headDim");
    c.rotary_dim = ConfigInt(cfg, "rotaryDim");
    c.rope_theta = static_cast<float>(ConfigNumber(cfg, "ropeTheta", 10000));
    c.ffn = ConfigInt(cfg, "intermediateSize");
    c.vocab = ConfigInt(cfg, "vocabSize");
    c.max_seq = ConfigInt(cfg, "maxSeqLen");
    c.eps = static_cast<float>(ConfigNumber(cfg, "layerNormEps", 1e-5));
    int threads = ThreadsOption(info.Length() > 2 ? info[2] : env.Undefined());
    try {
      core_ = LoadCore(WeightsSpec::FromValue(info[0]), c, threads);
    } catch (const Napi::Error&) {
      throw;
    } catch (const std::exception& e) {
      ThrowSpecFailure(env, e);
    }
    info.This().As<Napi::Object>().TypeTag(&kPhiModelTag);
  }

  std::shared_ptr<PhiCore> core(Napi::Env env) const {
    if (!core_) throw MakeError(env, "ERR_WEIGHTMAP_DISPOSED", "the PhiModel was disposed");
    return core_;
  }

 private:
  Napi::Value Threads(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), core_ ? core_->pool->size() : 0);
  }

  // embed(ids: Int32Array): Float32Array [n, d], the f32 rows of the word embedding.
  Napi::Value Embed(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::shared_ptr<PhiCore> c = core(env);
    if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(env, "embed(ids): ids must be an Int32Array");
    Napi::Int32Array ids = info[0].As<Napi::Int32Array>();
    const int64_t d = c->model->config().dim;
    Napi::Float32Array out = Napi::Float32Array::New(env, ids.ElementLength() * d);
    try {
      c->model->Embed(ids.Data(), static_cast<int64_t>(ids.ElementLength()), out.Data());
    } catch (const std::exception& e) {
      FailureInfo f = DescribeFailure(e);
      throw MakeError(env, f.code, f.message);
    }
    return out;
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    core_.reset();
    return info.Env().Undefined();
  }

  std::shared_ptr<PhiCore> core_;
};

struct PhiSessionState {
  explicit PhiSessionState(std::shared_ptr<PhiCore> c) : core(std::move(c)), session(core->model) {}
  std::shared_ptr<PhiCore> core;
  engines::PhiSession session;
  std::atomic<bool> abort{false};
  bool busy = false;  // JS thread only
};

class EvalWorker : public PromiseWorker {
 public:
  // Exactly one of ids / rows is non-empty.
  EvalWorker(Napi::Env env, std::shared_ptr<PhiSessionState> state, std::vector<int32_t> ids, std::vector<float> rows,
             int64_t n, engines::LogitsMode mode, int64_t prefix)
      : PromiseWorker(env, "weightmap:phi.eval"),
        state_(std::move(state)), ids_(std::move(ids)), rows_(std::move(rows)), n_(n), mode_(mode), prefix_(prefix) {}

  // Makes this a step() (mode kLast): the next token is chosen in Execute() and the promise
  // resolves to it.
  void SampleWith(std::unique_ptr<LentSampler> lent) { lent_ = std::move(lent); }

 protected:
  void Execute() override {
    try {
      const int64_t V = state_->core->model->config().vocab;
      const int64_t out_rows = mode_ == engines::LogitsMode::kAll ? n_ : mode_ == engines::LogitsMode::kLast ? 1 : 0;
      logits_.resize(static_cast<size_t>(out_rows * V));
      bool done = state_->session.Forward(*state_->core->pool, ids_.empty() ? nullptr : ids_.data(),
                                          rows_.empty() ? nullptr : rows_.data(), n_, mode_, logits_.data(), prefix_,
                                          &state_->abort);
      if (!done) Fail(kAbortCode, kAbortMessage);
      else if (lent_) token_ = lent_->Sample(logits_.data(), static_cast<int32_t>(V));
    } catch (const std::exception& e) {
      FailureInfo f = DescribeFailure(e);
      Fail(f.code, f.message);
    }
  }
  Napi::Value Result(Napi::Env env) override {
    if (stepped_) return Napi::Number::New(env, token_);
    Napi::Float32Array out = Napi::Float32Array::New(env, logits_.size());
    std::copy(logits_.begin(), logits_.end(), out.Data());
    return out;
  }
  // The session and the sampler are free again before the promise settles.
  void OnOK() override {
    state_->busy = false;
    stepped_ = lent_ != nullptr;
    lent_.reset();
    PromiseWorker::OnOK();
  }
  void OnError(const Napi::Error& e) override {
    state_->busy = false;
    lent_.reset();
    PromiseWorker::OnError(e);
  }

 private:
  std::shared_ptr<PhiSessionState> state_;
  std::vector<int32_t> ids_;
  std::vector<float> rows_;
  int64_t n_;
  engines::LogitsMode mode_;
  int64_t prefix_;
  std::vector<float> logits_;
  std::unique_ptr<LentSampler> lent_;
  bool stepped_ = false;
  int32_t token_ = -1;
};

class PhiSessionWrap : public Napi::ObjectWrap<PhiSessionWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    exports.Set("PhiSession", DefineClass(env, "PhiSession",
                                          {InstanceAccessor<&PhiSessionWrap::Position>("position"),
                                           InstanceAccessor<&PhiSessionWrap::CacheBytes>("cacheBytes"),
                                           InstanceMethod<&PhiSessionWrap::Eval>("eval"),
                                           InstanceMethod<&PhiSessionWrap::Step>("step"),
                                           InstanceMethod<&PhiSessionWrap::Truncate>("truncate"),
                                           InstanceMethod<&PhiSessionWrap::Abort>("abort"),
                                           InstanceMethod<&PhiSessionWrap::Dispose>("dispose")}));
  }

  // new PhiSession(model)
  explicit PhiSessionWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<PhiSessionWrap>(info) {
    PhiModelWrap* model = UnwrapTagged<PhiModelWrap>(info[0], kPhiModelTag, "PhiModel");
    state_ = std::make_shared<PhiSessionState>(model->core(info.Env()));
  }

 private:
  PhiSessionState& Ready(Napi::Env env, const char* what) {
    if (!state_) throw MakeError(env, "ERR_WEIGHTMAP_DISPOSED", "the PhiSession was disposed");
    if (state_->busy) throw MakeError(env, "ERR_WEIGHTMAP_BUSY", std::string(what) + ": the session is still running a call");
    return *state_;
  }

  Napi::Value Position(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? static_cast<double>(state_->session.position()) : 0);
  }
  Napi::Value CacheBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? static_cast<double>(state_->session.cache_bytes()) : 0);
  }

  // eval(input: Int32Array (token ids) | Float32Array (embedding rows [n, d]),
  //      logits: 'none' | 'last' | 'all', prefix: number): Promise<Float32Array>
  Napi::Value Eval(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    PhiSessionState& st = Ready(env, "eval");
    const int64_t d = st.core->model->config().dim;
    std::vector<int32_t> ids;
    std::vector<float> rows;
    int64_t n = 0;
    if (info.Length() > 0 && info[0].IsTypedArray() && info[0].As<Napi::TypedArray>().TypedArrayType() == napi_int32_array) {
      Napi::Int32Array a = info[0].As<Napi::Int32Array>();
      ids.assign(a.Data(), a.Data() + a.ElementLength());
      n = static_cast<int64_t>(ids.size());
    } else if (info.Length() > 0 && info[0].IsTypedArray() &&
               info[0].As<Napi::TypedArray>().TypedArrayType() == napi_float32_array) {
      Napi::Float32Array a = info[0].As<Napi::Float32Array>();
      if (a.ElementLength() % d != 0)
        throw MakeError(env, "ERR_OUT_OF_RANGE", "eval(rows): rows must hold whole rows of " + std::to_string(d) + " floats");
      rows.assign(a.Data(), a.Data() + a.ElementLength());
      n = static_cast<int64_t>(rows.size()) / d;
    } else {
      ThrowTypeError(env, "eval(input, logits, prefix): input must be an Int32Array of ids or a Float32Array of embedding rows");
    }
    if (n == 0) throw MakeError(env, "ERR_OUT_OF_RANGE", "eval(input): input is empty");
    std::string which = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
    engines::LogitsMode mode;
    if (which == "none") mode = engines::LogitsMode::kNone;
    else if (which == "last") mode = engines::LogitsMode::kLast;
    else if (which == "all") mode = engines::LogitsMode::kAll;
    else ThrowTypeError(env, "eval(input, logits, prefix): logits must be 'none', 'last' or 'all'");
    double prefix = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().DoubleValue() : 0;
    if (!(prefix >= 0) || prefix > 1e9 || prefix != static_cast<double>(static_cast<int64_t>(prefix)))
      ThrowTypeError(env, "eval(input, logits, prefix): prefix must be a non-negative integer");
    st.abort.store(false);
    st.busy = true;
    return (new EvalWorker(env, state_, std::move(ids), std::move(rows), n, mode, static_cast<int64_t>(prefix)))->Start();
  }

  // step(ids: Int32Array, sampler: Sampler, params?, recent?: Int32Array): Promise<number>: eval()
  // of token ids, then the next token drawn in the same worker from the last position's logits.
  Napi::Value Step(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    PhiSessionState& st = Ready(env, "step");
    if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(env, "step(ids, sampler, params, recent): ids must be an Int32Array");
    Napi::Int32Array a = info[0].As<Napi::Int32Array>();
    if (a.ElementLength() == 0) throw MakeError(env, "ERR_OUT_OF_RANGE", "step(ids): ids is empty");
    std::vector<int32_t> ids(a.Data(), a.Data() + a.ElementLength());
    auto lent = std::make_unique<LentSampler>(env, info.Length() > 1 ? info[1] : env.Undefined(),
                                              info.Length() > 2 ? info[2] : env.Undefined(),
                                              info.Length() > 3 ? info[3] : env.Undefined());
    const int64_t n = static_cast<int64_t>(ids.size());
    st.abort.store(false);
    st.busy = true;
    auto* worker = new EvalWorker(env, state_, std::move(ids), {}, n, engines::LogitsMode::kLast, 0);
    worker->SampleWith(std::move(lent));
    return worker->Start();
  }

  Napi::Value Truncate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    PhiSessionState& st = Ready(env, "truncate");
    double n = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
    if (!(n >= 0) || n > static_cast<double>(st.session.position()) || n != static_cast<double>(static_cast<int64_t>(n)))
      throw MakeError(env, "ERR_OUT_OF_RANGE", "truncate(n): n must be an integer in [0, position]");
    st.session.Rewind(static_cast<int64_t>(n));
    return env.Undefined();
  }

  Napi::Value Abort(const Napi::CallbackInfo& info) {
    if (state_) state_->abort.store(true);
    return info.Env().Undefined();
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (state_) {
      state_->abort.store(true);
      state_.reset();
    }
    return info.Env().Undefined();
  }

  std::shared_ptr<PhiSessionState> state_;
};

void Register(Napi::Env env, Napi::Object exports) {
  PhiModelWrap::Init(env, exports);
  PhiSessionWrap::Init(env, exports);
}

}  // namespace

WEIGHTMAP_REGISTER(Phi, Register);

}  // namespace weightmap
