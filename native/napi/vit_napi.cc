// JS class VitModel: the vision encoder and projection (native/engines/vit.h) of Moondream (MOON)
// or of an mmproj GGUF, with its own thread pool. encode() runs on libuv's pool and returns a
// Promise; one at a time.
#include <napi.h>

#include <atomic>
#include <initializer_list>
#include <string>
#include <memory>
#include <vector>

#include "engines/vit.h"
#include "napi/engine_args.h"
#include "napi/model_wrap.h"
#include "napi/register.h"

namespace weightmap {

namespace {

// What the running encode shares with the JS object.
struct EncodeSlot {
  std::atomic<bool> abort{false};
  bool busy = false;  // JS thread only
};

class EncodeWorker : public EngineWorker {
 public:
  EncodeWorker(Napi::Env env, std::shared_ptr<const engines::VitModel> model, std::shared_ptr<EncodeSlot> slot,
               std::vector<uint8_t> rgb, bool features)
      : EngineWorker(env, "weightmap:vit.encode"), model_(std::move(model)), slot_(std::move(slot)), rgb_(std::move(rgb)),
        want_features_(features) {}

 protected:
  void Run() override {
    const engines::VitConfig& c = model_->config();
    embeddings_.resize(static_cast<size_t>(c.n_tokens() * c.text_dim));
    if (want_features_) features_.resize(static_cast<size_t>(c.n_patches * c.dim));
    model_->Encode(rgb_.data(), want_features_ ? features_.data() : nullptr, embeddings_.data(), slot_->abort);
  }
  Napi::Value Result(Napi::Env env) override {
    Napi::Object out = Napi::Object::New(env);
    Napi::Float32Array emb = Napi::Float32Array::New(env, embeddings_.size());
    std::copy(embeddings_.begin(), embeddings_.end(), emb.Data());
    out.Set("embeddings", emb);
    if (want_features_) {
      Napi::Float32Array feat = Napi::Float32Array::New(env, features_.size());
      std::copy(features_.begin(), features_.end(), feat.Data());
      out.Set("features", feat);
    }
    return out;
  }
  void Release() override { slot_->busy = false; }

 private:
  std::shared_ptr<const engines::VitModel> model_;
  std::shared_ptr<EncodeSlot> slot_;
  std::vector<uint8_t> rgb_;
  bool want_features_;
  std::vector<float> embeddings_, features_;
};

class VitModelWrap : public ModelWrap<VitModelWrap, engines::VitModel> {
 public:
  static constexpr const char* kName = "VitModel";

  static void Init(Napi::Env env, Napi::Object exports) {
    Define(env, exports, {InstanceMethod<&VitModelWrap::Encode>("encode"), InstanceMethod<&VitModelWrap::Abort>("abort")},
           &VitModelWrap::Load);
  }

  using ModelWrap::ModelWrap;

 private:
  // The enum field `key` of cfg by its JS name (names[i] is value i); `fallback` when absent.
  template <typename E>
  static E ReadEnum(Napi::Env env, const Napi::Object& cfg, const char* key, std::initializer_list<const char*> names, E fallback) {
    Napi::Value v = cfg.Get(key);
    if (v.IsUndefined()) return fallback;
    const std::string s = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
    int i = 0;
    for (const char* name : names) {
      if (s == name) return static_cast<E>(i);
      i++;
    }
    ThrowTypeError(env, std::string("VitModel config.") + key + " is not one of its names");
    return fallback;
  }

  // Three finite numbers of cfg[key] into out (absent: out unchanged).
  static void ReadTriple(Napi::Env env, const Napi::Object& cfg, const char* key, float* out) {
    Napi::Value v = cfg.Get(key);
    if (v.IsUndefined()) return;
    if (!v.IsArray() || v.As<Napi::Array>().Length() != 3) ThrowTypeError(env, std::string("VitModel config.") + key + " must be 3 numbers");
    Napi::Array a = v.As<Napi::Array>();
    for (uint32_t i = 0; i < 3; i++) {
      Napi::Value e = a.Get(i);
      if (!e.IsNumber()) ThrowTypeError(env, std::string("VitModel config.") + key + " must be 3 numbers");
      out[i] = e.As<Napi::Number>().FloatValue();
    }
  }

  // load(spec, config, options?: { threads }): Promise<VitModel>. config: MoondreamConfig['vision']
  // fields + textHiddenSize, plus for an mmproj GGUF (lib/engines/vision.ts) layout 'gguf',
  // projector, activation, imageMean, imageStd and merge.
  static Napi::Value Load(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    engines::VitConfig c;
    Napi::Object cfg = OptionsObject(env, info.Length() > 1 ? info[1] : env.Undefined(), "config");
    c.layout = ReadEnum(env, cfg, "layout", {"moon", "gguf"}, engines::VitLayout::MoonF16);
    c.projector = ReadEnum(env, cfg, "projector", {"moondream", "gemma3", "idefics3"}, engines::VitProjector::Moondream);
    c.activation = ReadEnum(env, cfg, "activation", {"gelu_tanh", "gelu_quick", "gelu_erf", "silu"}, engines::VitActivation::GeluTanh);
    ReadTriple(env, cfg, "imageMean", c.mean);
    ReadTriple(env, cfg, "imageStd", c.std);
    c.dim = ReadInt(cfg, "hiddenSize", 1, 1 << 20);
    c.n_layers = ReadInt(cfg, "numLayers", 1, 1 << 16);
    c.n_heads = ReadInt(cfg, "numHeads", 1, 1 << 16);
    c.head_dim = ReadInt(cfg, "headDim", 1, 1 << 16);
    c.ffn = ReadInt(cfg, "intermediateSize", 1, 1 << 24);
    c.patch = ReadInt(cfg, "patchSize", 1, 1 << 12);
    c.image_size = ReadInt(cfg, "imageSize", 1, 1 << 14);
    c.n_patches = ReadInt(cfg, "numPatches", 1, 1 << 24);
    if (c.projector == engines::VitProjector::Moondream) c.proj_hidden = ReadInt(cfg, "projHidden", 1, 1 << 24);
    else c.merge = ReadInt(cfg, "merge", 1, 1 << 12);
    c.text_dim = ReadInt(cfg, "textHiddenSize", 1, 1 << 20);
    c.eps = static_cast<float>(ReadNumber(cfg, "layerNormEps", 1e-5));
    const int threads = ThreadsOption(OptionsObject(env, info.Length() > 2 ? info[2] : env.Undefined(), "options"));
    const std::shared_ptr<const WeightsSpec> spec = LoadSpecArgument(info);
    return StartLoad<engines::VitModel>(env, kName, [c, spec, threads] { return engines::VitModel::Load(c, spec, threads); });
  }

  // encode(rgb: Uint8Array [S·S·3], features: boolean): Promise<{ embeddings, features? }>.
  // One call at a time (abort() stops the running one).
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto& handle = Live(env);
    if (slot_->busy) throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "encode: the model is still encoding an image");
    if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
      ThrowTypeError(env, "encode(rgb, features): rgb must be a Uint8Array");
    Napi::Uint8Array rgb = info[0].As<Napi::Uint8Array>();
    const engines::VitConfig& c = handle->model->config();
    const size_t expected = static_cast<size_t>(c.image_size * c.image_size * 3);
    if (rgb.ElementLength() != expected)
      throw MakeError(env, "ERR_OUT_OF_RANGE", "encode(rgb): rgb must hold " + std::to_string(c.image_size) + "x" +
                                                   std::to_string(c.image_size) + "x3 = " + std::to_string(expected) +
                                                   " bytes, got " + std::to_string(rgb.ElementLength()));
    bool features = info.Length() > 1 && info[1].ToBoolean().Value();
    std::vector<uint8_t> copy(rgb.Data(), rgb.Data() + rgb.ElementLength());
    slot_->abort = false;
    slot_->busy = true;
    return (new EncodeWorker(env, handle->model, slot_, std::move(copy), features))->Start();
  }

  Napi::Value Abort(const Napi::CallbackInfo& info) {
    slot_->abort = true;
    return info.Env().Undefined();
  }

 public:
  void OnDispose() { slot_->abort = true; }  // the running encode stops at its next layer

 private:
  std::shared_ptr<EncodeSlot> slot_ = std::make_shared<EncodeSlot>();
};

void Register(Napi::Env env, Napi::Object exports) { VitModelWrap::Init(env, exports); }

}  // namespace

WEIGHTMAP_REGISTER(Vit, Register);

}  // namespace weightmap
