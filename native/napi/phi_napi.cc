// JS classes PhiModel (Moondream's text weights + thread pool) and PhiSession (one sequence and its
// KV cache, session_wrap.h) over native/engines/phi.h.
#include <napi.h>

#include <memory>

#include "engines/phi.h"
#include "napi/engine_args.h"
#include "napi/model_wrap.h"
#include "napi/register.h"
#include "napi/session_wrap.h"

namespace weightmap {

namespace {

struct PhiTraits {
  using Model = engines::PhiModel;
  using Session = engines::PhiSession;
  static constexpr const char* kName = "PhiSession";
  static constexpr bool kPrefix = true;
  static constexpr bool kSteps = false;
  static constexpr bool kBidirectionalRows = false;
  // Embedding rows (token and image embeddings) of the text model's width.
  static int64_t RowWidth(const Session& s) { return s.config().dim; }
  static int64_t Vocab(const Session& s) { return s.config().vocab; }
  static const char* CannotStep(const Session&) { return nullptr; }
  static int64_t OutputFloats(const Session& s, const EvalInput& in) { return in.logit_rows() * Vocab(s); }
  static void Eval(Session& s, const EvalInput& in, float* out, const std::atomic<bool>& abort) {
    const engines::LogitsMode mode = in.logits == LogitsRows::All    ? engines::LogitsMode::kAll
                                     : in.logits == LogitsRows::Last ? engines::LogitsMode::kLast
                                                                     : engines::LogitsMode::kNone;
    s.Forward(in.ids.empty() ? nullptr : in.ids.data(), in.has_rows() ? in.rows.data() : nullptr, in.n, mode, out, in.prefix,
              abort);
  }
};

class PhiModelWrap : public ModelWrap<PhiModelWrap, engines::PhiModel> {
 public:
  static constexpr const char* kName = "PhiModel";

  static void Init(Napi::Env env, Napi::Object exports) {
    Define(env, exports,
           {InstanceMethod<&PhiModelWrap::CreateSession>("createSession"), InstanceMethod<&PhiModelWrap::Embed>("embed")},
           &PhiModelWrap::Load);
  }

  using ModelWrap::ModelWrap;

 private:
  // load(spec, config: MoondreamConfig['text'] fields, options?: { threads }): Promise<PhiModel>
  static Napi::Value Load(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    engines::PhiConfig c;
    Napi::Object cfg = OptionsObject(env, info.Length() > 1 ? info[1] : env.Undefined(), "config");
    c.dim = ReadInt(cfg, "hiddenSize", 1, 1 << 20);
    c.n_layers = ReadInt(cfg, "numLayers", 1, 1 << 16);
    c.n_heads = ReadInt(cfg, "numHeads", 1, 1 << 16);
    c.head_dim = ReadInt(cfg, "headDim", 1, 1 << 16);
    c.rotary_dim = ReadInt(cfg, "rotaryDim", 1, 1 << 16);
    c.rope_theta = static_cast<float>(ReadNumber(cfg, "ropeTheta", 10000));
    c.ffn = ReadInt(cfg, "intermediateSize", 1, 1 << 24);
    c.vocab = ReadInt(cfg, "vocabSize", 1, int64_t{1} << 31);
    c.max_seq = ReadInt(cfg, "maxSeqLen", 1, 1 << 24);
    c.eps = static_cast<float>(ReadNumber(cfg, "layerNormEps", 1e-5));
    const int threads = ThreadsOption(OptionsObject(env, info.Length() > 2 ? info[2] : env.Undefined(), "options"));
    const std::shared_ptr<const WeightsSpec> spec = LoadSpecArgument(info);
    return StartLoad<engines::PhiModel>(env, kName, [c, spec, threads] { return engines::PhiModel::Load(c, spec, threads); });
  }

  // createSession(): PhiSession, its KV cache growing with the positions it holds.
  Napi::Value CreateSession(const Napi::CallbackInfo& info) {
    const auto& handle = Live(info.Env());
    return SessionWrap<PhiTraits>::New(info.Env(), handle, std::make_unique<engines::PhiSession>(handle->model));
  }

  // embed(ids: Int32Array): Float32Array [n, d], the f32 rows of the word embedding (a lookup: sync).
  Napi::Value Embed(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto& handle = Live(env);
    if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(env, "embed(ids): ids must be an Int32Array");
    Napi::Int32Array ids = info[0].As<Napi::Int32Array>();
    const int64_t d = handle->model->config().dim;
    Napi::Float32Array out = Napi::Float32Array::New(env, ids.ElementLength() * d);
    try {
      handle->model->Embed(ids.Data(), static_cast<int64_t>(ids.ElementLength()), out.Data());
    } catch (const std::exception& e) {
      ThrowEngineFailure(env, e);
    }
    return out;
  }
};

void Register(Napi::Env env, Napi::Object exports) {
  PhiModelWrap::Init(env, exports);
  SessionWrap<PhiTraits>::Init(env, exports);
}

}  // namespace

WEIGHTMAP_REGISTER(Phi, Register);

}  // namespace weightmap
