// JS classes DecoderModel and DecoderSession (binding.d.ts) over native/engines/decoder/decoder.h: the
// session is session_wrap.h's; the model adds stepBatch (several sessions' steps in one pass) and
// what loading cost.
#include <atomic>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engines/decoder/decoder.h"
#include "engines/decoder/batch.h"
#include "engines/decoder/pooled.h"
#include "kernels/kernels.h"
#include "napi/decoder_config.h"
#include "napi/engine_args.h"
#include "napi/model_wrap.h"
#include "napi/register.h"
#include "napi/session_wrap.h"

namespace weightmap {
namespace decoder {

namespace {

struct DecoderTraits {
  using Model = DecoderModel;
  using Session = DecoderSession;
  static constexpr const char* kName = "DecoderSession";
  static constexpr bool kPrefix = false;
  static constexpr bool kSteps = true;
  static constexpr bool kBidirectionalRows = true;
  // Rows [n, dim] instead of ids: a pipeline stage's hidden states (one that starts past layer 0),
  // or rows entering layer 0 (image embeddings, named in tokens() by options.ids).
  static int64_t RowWidth(const Session& s) { return s.model()->config().dim; }
  static int64_t Vocab(const Session& s) { return s.model()->config().vocab; }
  static const char* CannotStep(const Session& s) {
    return s.model()->has_head() ? nullptr : "step() needs the model's head; this model ends before the last layer";
  }
  static int64_t OutputFloats(const Session& s, const EvalInput& in) {
    return in.logits == LogitsRows::None ? 0 : s.OutputFloats(in.n, in.logits == LogitsRows::All || in.logits == LogitsRows::Steps);
  }
  static void Eval(Session& s, const EvalInput& in, float* out, const std::atomic<bool>& abort) {
    std::vector<float> discarded;
    if (in.logits == LogitsRows::None) {
      discarded.resize(static_cast<size_t>(s.OutputFloats(in.n, false)));
      out = discarded.data();
    }
    const bool steps = in.logits == LogitsRows::Steps;
    const bool all = in.logits == LogitsRows::All || steps;
    if (in.has_rows()) s.EvalRows(in.rows.data(), in.ids.empty() ? nullptr : in.ids.data(), in.n, in.bidirectional, all, out, abort);
    else s.Eval(in.ids.data(), in.n, all, out, abort, steps);
  }
};

using SessionClass = SessionWrap<DecoderTraits>;

// stepBatch(): one BatchStep over several sessions, then each row's token drawn with its own
// Sampler and params, as step() draws it. Resolves to Int32Array [n]: the tokens, -1 for a row
// whose session was aborted during the step (its session keeps its position).
class StepBatchWorker : public EngineWorker {
 public:
  struct Row {
    std::shared_ptr<SessionState<DecoderTraits>> state;
    int32_t id;
    std::unique_ptr<LentSampler> sampler;
  };
  StepBatchWorker(Napi::Env env, std::vector<Row> rows) : EngineWorker(env, "weightmap:decoder-step-batch"), rows_(std::move(rows)) {}

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
    // [n, vocab], kept by this worker thread from step to step: a fresh 5 MB (8 rows of Qwen's
    // vocabulary) was mapped, faulted in page by page and unmapped at every step.
    thread_local std::vector<float> logits;
    if (logits.size() < static_cast<size_t>(n * vocab)) logits.resize(static_cast<size_t>(n * vocab));
    const std::vector<bool> committed = BatchStep::Run(sessions.data(), ids.data(), n, aborts.data(), logits.data());
    tokens_.assign(n, -1);
    for (int64_t i = 0; i < n; i++) {
      if (!committed[i]) continue;
      const std::vector<int32_t>& history = sessions[i]->tokens();
      tokens_[i] = rows_[i].sampler->Sample(logits.data() + i * vocab, static_cast<int32_t>(vocab), history.data(),
                                            static_cast<int32_t>(history.size()));
    }
    if (logits.size() > kKeptLogits) std::vector<float>().swap(logits);  // a rare large batch: not kept
  }
  static constexpr size_t kKeptLogits = size_t(16) << 20;  // floats (64 MB)
  Napi::Value Result(Napi::Env env) override {
    Napi::Int32Array out = Napi::Int32Array::New(env, tokens_.size());
    for (size_t i = 0; i < tokens_.size(); i++) out[i] = tokens_[i];
    return out;
  }
  void Release() override {
    for (Row& row : rows_) {
      row.state->busy = false;
      row.sampler.reset();
    }
  }

 private:
  std::vector<Row> rows_;
  std::vector<int32_t> tokens_;
};

// pool(): PooledPass over a packed batch; resolves to Float32Array [n_seq, dim].
class PoolWorker : public EngineWorker {
 public:
  PoolWorker(Napi::Env env, std::shared_ptr<const DecoderModel> model, std::vector<int32_t> ids, std::vector<int32_t> lengths,
             Pooling pooling, std::shared_ptr<std::atomic<bool>> abort)
      : EngineWorker(env, "weightmap:decoder-pool"), model_(std::move(model)), ids_(std::move(ids)), lengths_(std::move(lengths)),
        pooling_(pooling), abort_(std::move(abort)) {}

 protected:
  void Run() override {
    out_.resize(lengths_.size() * model_->config().dim);
    PooledPass::Run(model_, ids_.data(), lengths_.data(), static_cast<int64_t>(lengths_.size()), pooling_, out_.data(), *abort_);
  }
  Napi::Value Result(Napi::Env env) override {
    Napi::Float32Array out = Napi::Float32Array::New(env, out_.size());
    if (!out_.empty()) std::memcpy(out.Data(), out_.data(), out_.size() * sizeof(float));
    return out;
  }

 private:
  std::shared_ptr<const DecoderModel> model_;
  std::vector<int32_t> ids_;      // [Σ lengths]
  std::vector<int32_t> lengths_;  // [n_seq]
  Pooling pooling_;
  std::shared_ptr<std::atomic<bool>> abort_;
  std::vector<float> out_;  // [n_seq, dim]
};

class DecoderModelWrap : public ModelWrap<DecoderModelWrap, DecoderModel> {
 public:
  static constexpr const char* kName = "DecoderModel";

  static void Init(Napi::Env env, Napi::Object exports) {
    Define(env, exports,
           {InstanceMethod<&DecoderModelWrap::CreateSession>("createSession"),
            InstanceMethod<&DecoderModelWrap::StepBatch>("stepBatch"),
            InstanceMethod<&DecoderModelWrap::Pool>("pool"),
            InstanceAccessor<&DecoderModelWrap::LoadInfo>("loadInfo")},
           &DecoderModelWrap::Load);
  }

  using ModelWrap::ModelWrap;

 private:
  // load(spec: { files, tensors }, config, options?): Promise<DecoderModel>. The views are checked
  // against their mappings here, synchronously (SpecError codes throw); checking them against the
  // config and preparing the weights runs in a worker.
  static Napi::Value Load(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2) ThrowTypeError(env, "load(spec, config, options): spec and config are required");
    DecoderConfig config = ParseConfig(info[1]);
    DecoderOptions options = ParseOptions(env, info.Length() > 2 ? info[2] : env.Undefined());
    const std::shared_ptr<const WeightsSpec> spec = LoadSpecArgument(info);
    return StartLoad<DecoderModel>(env, kName, [config, spec, options] { return DecoderModel::Load(config, spec, options); });
  }

  // createSession({ contextLength, kvCache? }): DecoderSession. The KV cache is reserved, not written.
  Napi::Value CreateSession(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto& handle = Live(env);
    if (info.Length() < 1 || !info[0].IsObject()) ThrowTypeError(env, "createSession(options): options must be an object");
    Napi::Object options = info[0].As<Napi::Object>();
    const int64_t context = ReadInt(options, "contextLength", 1, handle->model->config().max_seq_len);
    const KvType kv = ParseKvType(env, options.Get("kvCache"), handle->model->default_kv());
    std::unique_ptr<DecoderSession> session;
    try {
      session = std::make_unique<DecoderSession>(handle->model, context, kv);
    } catch (const std::bad_alloc&) {
      throw MakeError(env, "ERR_WEIGHTMAP_OUT_OF_MEMORY", "not enough memory for a KV cache of " + std::to_string(context) + " positions");
    } catch (const std::exception& e) {
      ThrowEngineFailure(env, e);
    }
    return SessionClass::New(env, handle, std::move(session));
  }

  // stepBatch(sessions: DecoderSession[], ids: Int32Array, samplers: Sampler[], params: (NativeSamplingParams | undefined)[],
  // allowed?: (Uint32Array | undefined)[]): Promise<Int32Array>. Every session (of this model, idle, distinct) feeds
  // ids[i] at its position; row i draws with samplers[i], params[i] (read once per Sampler and object) and allowed[i].
  Napi::Value StepBatch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto& handle = Live(env);
    if (!handle->model->has_head() || !handle->model->embeds())
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
    const bool has_allowed = info.Length() > 4 && !info[4].IsUndefined();
    if (has_allowed && (!info[4].IsArray() || info[4].As<Napi::Array>().Length() != n))
      ThrowTypeError(env, "stepBatch: allowed must be an array as long as sessions");
    auto allowed = [&](uint32_t i) { return has_allowed ? info[4].As<Napi::Array>().Get(i) : env.Undefined(); };
    std::vector<StepBatchWorker::Row> rows(n);
    std::set<const SessionState<DecoderTraits>*> seen;
    for (uint32_t i = 0; i < n; i++) {
      const std::string at = "sessions[" + std::to_string(i) + "]";
      std::shared_ptr<SessionState<DecoderTraits>> state = SessionClass::LiveState(env, sessions.Get(i), "the DecoderSession at " + at);
      if (state->model != handle) throw MakeError(env, "ERR_OUT_OF_RANGE", "stepBatch: " + at + " belongs to another model");
      if (!seen.insert(state.get()).second) throw MakeError(env, "ERR_OUT_OF_RANGE", "stepBatch: " + at + " appears twice");
      rows[i].state = std::move(state);
      rows[i].id = ids[i];
    }
    // Lends every sampler (the registry refuses one lent elsewhere or twice here), then claims every
    // session, or none: a failure gives back what was taken.
    for (uint32_t i = 0; i < n; i++)
      rows[i].sampler =
          std::make_unique<LentSampler>(env, samplers.Get(i), params.Get(i), allowed(i), "stepBatch: samplers[" + std::to_string(i) + "]");
    for (uint32_t i = 0; i < n; i++) {
      if (rows[i].state->busy.exchange(true)) {
        for (uint32_t j = 0; j < i; j++) rows[j].state->busy = false;
        throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "stepBatch: sessions[" + std::to_string(i) + "] is in use by another call; await it first");
      }
    }
    for (StepBatchWorker::Row& row : rows) row.state->abort = false;  // as eval() does: an abort() from now on counts
    return (new StepBatchWorker(env, std::move(rows)))->Start();
  }

  // pool(ids: Int32Array, lengths: Int32Array, pooling: 'last' | 'mean') -> { promise, abort }: the
  // final hidden states (after the final norm) of each packed sequence, pooled (PooledPass).
  Napi::Value Pool(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto& handle = Live(env);
    auto int32 = [](Napi::Value v) { return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array; };
    if (info.Length() < 3 || !int32(info[0]) || !int32(info[1])) ThrowTypeError(env, "pool(ids, lengths, pooling): ids and lengths must be Int32Arrays");
    const std::string name = info[2].IsString() ? info[2].As<Napi::String>().Utf8Value() : "";
    if (name != "last" && name != "mean") ThrowTypeError(env, "pooling must be 'last' or 'mean'");
    Napi::Int32Array ids = info[0].As<Napi::Int32Array>();
    Napi::Int32Array lengths = info[1].As<Napi::Int32Array>();
    uint64_t total = 0;
    for (size_t i = 0; i < lengths.ElementLength(); i++) total += lengths[i] > 0 ? static_cast<uint64_t>(lengths[i]) : 0;
    if (total != ids.ElementLength())
      ThrowRange(env, "lengths add up to " + std::to_string(total) + " but there are " + std::to_string(ids.ElementLength()) + " ids");
    // The lengths and ids themselves are checked by PooledPass, before it allocates.
    std::vector<int32_t> id_copy(ids.Data(), ids.Data() + ids.ElementLength());
    std::vector<int32_t> len_copy(lengths.Data(), lengths.Data() + lengths.ElementLength());
    auto abort = std::make_shared<std::atomic<bool>>(false);
    Napi::Object job = Napi::Object::New(env);
    job.Set("promise", (new PoolWorker(env, handle->model, std::move(id_copy), std::move(len_copy),
                                       name == "last" ? Pooling::Last : Pooling::Mean, abort))
                           ->Start());
    job.Set("abort", Napi::Function::New(env, [abort](const Napi::CallbackInfo&) { abort->store(true); }, "abort"));
    return job;
  }

  // What preparing the weights cost: { loadMs, copiedBytes, converted, kept, threads, isa }.
  Napi::Value LoadInfo(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const DecoderModel& m = *Live(env)->model;
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
};

void InitDecoder(Napi::Env env, Napi::Object exports) {
  DecoderModelWrap::Init(env, exports);
  SessionClass::Init(env, exports);
  exports.Set("decoderNames", DecoderNames(env));
}

}  // namespace

WEIGHTMAP_REGISTER(Decoder, InitDecoder);

}  // namespace decoder
}  // namespace weightmap
