// JS classes GptModel (TLLM weights + thread pool) and GptSession (one sequence and its KV cache,
// session_wrap.h) over native/engines/gpt.h.
#include <napi.h>

#include <memory>

#include "engines/gpt.h"
#include "napi/engine_args.h"
#include "napi/model_wrap.h"
#include "napi/register.h"
#include "napi/session_wrap.h"

namespace weightmap {

namespace {

struct GptTraits {
  using Model = engines::GptModel;
  using Session = engines::GptSession;
  static constexpr const char* kName = "GptSession";
  static constexpr bool kPrefix = false;
  static constexpr bool kSteps = false;
  static constexpr bool kBidirectionalRows = false;
  static int64_t RowWidth(const Session&) { return 0; }
  static int64_t Vocab(const Session& s) { return s.model().config().vocab; }
  static const char* CannotStep(const Session&) { return nullptr; }
  static int64_t OutputFloats(const Session& s, const EvalInput& in) { return in.logit_rows() * Vocab(s); }
  static void Eval(Session& s, const EvalInput& in, float* out, const std::atomic<bool>& abort) {
    if (in.logits == LogitsRows::None) {
      std::vector<float> last(static_cast<size_t>(Vocab(s)));
      s.Forward(in.ids.data(), in.n, false, last.data(), abort);
    } else {
      s.Forward(in.ids.data(), in.n, in.logits == LogitsRows::All, out, abort);
    }
  }
};

class GptModelWrap : public ModelWrap<GptModelWrap, engines::GptModel> {
 public:
  static constexpr const char* kName = "GptModel";

  static void Init(Napi::Env env, Napi::Object exports) {
    Define(env, exports, {InstanceMethod<&GptModelWrap::CreateSession>("createSession")}, &GptModelWrap::Load);
  }

  using ModelWrap::ModelWrap;

 private:
  // load(spec, config: TllmConfig fields, options?: { threads }): Promise<GptModel>
  static Napi::Value Load(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    engines::GptConfig c;
    Napi::Object cfg = OptionsObject(env, info.Length() > 1 ? info[1] : env.Undefined(), "config");
    c.dim = ReadInt(cfg, "hiddenSize", 1, 1 << 20);
    c.n_layers = ReadInt(cfg, "numLayers", 1, 1 << 16);
    c.n_heads = ReadInt(cfg, "numHeads", 1, 1 << 16);
    c.ffn = ReadInt(cfg, "intermediateSize", 1, 1 << 24);
    c.max_seq = ReadInt(cfg, "maxSeqLen", 1, 1 << 24);
    c.vocab = ReadInt(cfg, "vocabSize", 1, int64_t{1} << 31);
    c.eps = static_cast<float>(ReadNumber(cfg, "layerNormEps", 1e-5));
    const int threads = ThreadsOption(OptionsObject(env, info.Length() > 2 ? info[2] : env.Undefined(), "options"));
    const std::shared_ptr<const WeightsSpec> spec = LoadSpecArgument(info);
    return StartLoad<engines::GptModel>(env, kName, [c, spec, threads] { return engines::GptModel::Load(c, spec, threads); });
  }

  // createSession(): GptSession, its KV cache growing with the positions it holds.
  Napi::Value CreateSession(const Napi::CallbackInfo& info) {
    const auto& handle = Live(info.Env());
    return SessionWrap<GptTraits>::New(info.Env(), handle, std::make_unique<engines::GptSession>(handle->model));
  }
};

void Register(Napi::Env env, Napi::Object exports) {
  GptModelWrap::Init(env, exports);
  SessionWrap<GptTraits>::Init(env, exports);
}

}  // namespace

WEIGHTMAP_REGISTER(Gpt, Register);

}  // namespace weightmap
