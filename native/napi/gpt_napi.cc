// JS classes GptModel (TLLM weights + thread pool) and GptSession (one sequence and its KV cache)
// over native/engines/gpt.h. eval() runs on libuv's pool and returns a Promise.
#include <napi.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "engines/gpt.h"
#include "engines/weights_spec.h"
#include "napi/errors.h"
#include "napi/lent_sampler.h"
#include "napi/promise_worker.h"
#include "napi/register.h"
#include "napi/spec_views.h"
#include "threadpool.h"

namespace weightmap {

namespace {

// The names below are the canonical TLLM keys of lib/architectures/tllm.ts; every matrix is
// stored [in,out] (the view's shape is the stored one).
struct GptCore {
  std::shared_ptr<const WeightsSpec> spec;  // keeps the mappings behind `weights` alive
  engines::GptConfig config;
  engines::GptWeights weights;
  std::unique_ptr<ThreadPool> pool;
};

std::shared_ptr<GptCore> LoadCore(std::shared_ptr<const WeightsSpec> spec, const engines::GptConfig& c, int threads) {
  if (c.dim % c.n_heads != 0) throw std::invalid_argument("hidden size must be a multiple of the number of heads");
  auto core = std::make_shared<GptCore>();
  const WeightsSpec& s = *spec;
  const int64_t d = c.dim, f = c.ffn;
  core->weights.tok_emb = SpecF32(s, "model.embed_tokens.weight", {c.vocab, d});
  core->weights.pos_emb = SpecF32(s, "model.embed_positions.weight", {c.max_seq, d});
  for (int64_t l = 0; l < c.n_layers; l++) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    engines::GptLayer L;
    L.wq = SpecF32(s, p + "self_attn.q_proj.weight", {d, d});
    L.wk = SpecF32(s, p + "self_attn.k_proj.weight", {d, d});
    L.wv = SpecF32(s, p + "self_attn.v_proj.weight", {d, d});
    L.wo = SpecF32(s, p + "self_attn.o_proj.weight", {d, d});
    L.w1 = SpecF32(s, p + "mlp.fc1.weight", {d, f});
    L.b1 = SpecF32(s, p + "mlp.fc1.bias", {f});
    L.w2 = SpecF32(s, p + "mlp.fc2.weight", {f, d});
    L.b2 = SpecF32(s, p + "mlp.fc2.bias", {d});
    L.ln1_g = SpecF32(s, p + "input_layernorm.weight", {d});
    L.ln1_b = SpecF32(s, p + "input_layernorm.bias", {d});
    L.ln2_g = SpecF32(s, p + "post_attention_layernorm.weight", {d});
    L.ln2_b = SpecF32(s, p + "post_attention_layernorm.bias", {d});
    core->weights.layers.push_back(L);
  }
  core->weights.w_out = SpecF32(s, "lm_head.weight", {d, c.vocab});
  core->config = c;
  core->spec = std::move(spec);
  core->pool = std::make_unique<ThreadPool>(threads);
  return core;
}

class GptModelWrap : public Napi::ObjectWrap<GptModelWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    exports.Set("GptModel", DefineClass(env, "GptModel",
                                        {InstanceAccessor<&GptModelWrap::Threads>("threads"),
                                         InstanceMethod<&GptModelWrap::Dispose>("dispose")}));
  }

  // new GptModel(spec, config, options?)
  explicit GptModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<GptModelWrap>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[1].IsObject()) ThrowTypeError(env, "GptModel(spec, config, options?): config must be an object");
    Napi::Object cfg = info[1].As<Napi::Object>();
    engines::GptConfig c;
    c.dim = ConfigInt(cfg, "hiddenSize");
    c.n_layers = ConfigInt(cfg, "numLayers");
    c.n_heads = ConfigInt(cfg, "numHeads");
    c.ffn = ConfigInt(cfg, "intermediateSize");
    c.max_seq = ConfigInt(cfg, "maxSeqLen");
    c.vocab = ConfigInt(cfg, "vocabSize");
    c.eps = static_cast<float>(ConfigNumber(cfg, "layerNormEps", 1e-5));
    int threads = ThreadsOption(info.Length() > 2 ? info[2] : env.Undefined());
    try {
      core_ = LoadCore(WeightsSpec::FromValue(info[0]), c, threads);
    } catch (const Napi::Error&) {
      throw;
    } catch (const std::exception& e) {
      ThrowSpecFailure(env, e);
    }
    info.This().As<Napi::Object>().TypeTag(&kGptModelTag);
  }

  std::shared_ptr<GptCore> core(Napi::Env env) const {
    if (!core_) throw MakeError(env, "ERR_WEIGHTMAP_DISPOSED", "the GptModel was disposed");
    return core_;
  }

 private:
  Napi::Value Threads(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), core_ ? core_->pool->size() : 0);
  }
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    core_.reset();
    return info.Env().Undefined();
  }

  std::shared_ptr<GptCore> core_;
};

// What a session's workers share with it: the session survives a dispose() that happens while
// a worker still runs.
struct GptSessionState {
  explicit GptSessionState(std::shared_ptr<GptCore> c) : core(std::move(c)), session(core->config, core->weights) {}
  std::shared_ptr<GptCore> core;
  engines::GptSession session;
  std::atomic<bool> abort{false};
  bool busy = false;  // touched on the JS thread only
};

class EvalWorker : public PromiseWorker {
 public:
  EvalWorker(Napi::Env env, std::shared_ptr<GptSessionState> state, std::vector<int32_t> ids, bool all_logits)
      : PromiseWorker(env, "weightmap:gpt.eval"), state_(std::move(state)), ids_(std::move(ids)), all_(all_logits) {}

  // Makes this a step(): the next token is chosen in Execute() and the promise resolves to it.
  void SampleWith(std::unique_ptr<LentSampler> lent) { lent_ = std::move(lent); }

 protected:
  void Execute() override {
    try {
      const int64_t V = state_->core->config.vocab;
      logits_.resize(static_cast<size_t>((all_ ? ids_.size() : 1) * V));
      bool done = state_->session.Forward(*state_->core->pool, ids_.data(), static_cast<int64_t>(ids_.size()), all_,
                                          logits_.data(), &state_->abort);
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
  std::shared_ptr<GptSessionState> state_;
  std::vector<int32_t> ids_;
  bool all_;
  std::vector<float> logits_;
  std::unique_ptr<LentSampler> lent_;
  bool stepped_ = false;
  int32_t token_ = -1;
};

class GptSessionWrap : public Napi::ObjectWrap<GptSessionWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    exports.Set("GptSession", DefineClass(env, "GptSession",
                                          {InstanceAccessor<&GptSessionWrap::Position>("position"),
                                           InstanceAccessor<&GptSessionWrap::CacheBytes>("cacheBytes"),
                                           InstanceMethod<&GptSessionWrap::Eval>("eval"),
                                           InstanceMethod<&GptSessionWrap::Step>("step"),
                                           InstanceMethod<&GptSessionWrap::Truncate>("truncate"),
                                           InstanceMethod<&GptSessionWrap::Abort>("abort"),
                                           InstanceMethod<&GptSessionWrap::Dispose>("dispose")}));
  }

  // new GptSession(model)
  explicit GptSessionWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<GptSessionWrap>(info) {
    GptModelWrap* model = UnwrapTagged<GptModelWrap>(info[0], kGptModelTag, "GptModel");
    state_ = std::make_shared<GptSessionState>(model->core(info.Env()));
  }

 private:
  GptSessionState& Ready(Napi::Env env, const char* what) {
    if (!state_) throw MakeError(env, "ERR_WEIGHTMAP_DISPOSED", "the GptSession was disposed");
    if (state_->busy) throw MakeError(env, "ERR_WEIGHTMAP_BUSY", std::string(what) + ": the session is still running a call");
    return *state_;
  }

  Napi::Value Position(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? static_cast<double>(state_->session.position()) : 0);
  }
  Napi::Value CacheBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? static_cast<double>(state_->session.cache_bytes()) : 0);
  }

  // A copy of the non-empty Int32Array of ids in info[0].
  static std::vector<int32_t> IdsArg(const Napi::CallbackInfo& info, const char* what) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(env, std::string(what) + ": ids must be an Int32Array");
    Napi::Int32Array ids = info[0].As<Napi::Int32Array>();
    if (ids.ElementLength() == 0) throw MakeError(env, "ERR_OUT_OF_RANGE", std::string(what) + ": ids is empty");
    return std::vector<int32_t>(ids.Data(), ids.Data() + ids.ElementLength());
  }

  // eval(ids: Int32Array, allLogits: boolean): Promise<Float32Array>
  Napi::Value Eval(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    GptSessionState& st = Ready(env, "eval");
    std::vector<int32_t> ids = IdsArg(info, "eval(ids, allLogits)");
    bool all = info.Length() > 1 && info[1].ToBoolean().Value();
    st.abort.store(false);  // cleared here, not in the worker, so an abort() right after eval() counts
    st.busy = true;
    return (new EvalWorker(env, state_, std::move(ids), all))->Start();
  }

  // step(ids: Int32Array, sampler: Sampler, params?, recent?: Int32Array): Promise<number>: eval()
  // of ids, then the next token drawn in the same worker from the last position's logits.
  Napi::Value Step(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    GptSessionState& st = Ready(env, "step");
    std::vector<int32_t> ids = IdsArg(info, "step(ids, sampler, params, recent)");
    auto lent = std::make_unique<LentSampler>(env, info.Length() > 1 ? info[1] : env.Undefined(),
                                              info.Length() > 2 ? info[2] : env.Undefined(),
                                              info.Length() > 3 ? info[3] : env.Undefined());
    st.abort.store(false);
    st.busy = true;
    auto* worker = new EvalWorker(env, state_, std::move(ids), false);
    worker->SampleWith(std::move(lent));
    return worker->Start();
  }

  Napi::Value Truncate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    GptSessionState& st = Ready(env, "truncate");
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
      state_->abort.store(true);  // a running call stops at the next layer and frees the cache
      state_.reset();
    }
    return info.Env().Undefined();
  }

  std::shared_ptr<GptSessionState> state_;
};

void Register(Napi::Env env, Napi::Object exports) {
  GptModelWrap::Init(env, exports);
  GptSessionWrap::Init(env, exports);
}

}  // namespace

WEIGHTMAP_REGISTER(Gpt, Register);

}  // namespace weightmap
