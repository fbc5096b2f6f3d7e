// JS class VitModel: Moondream's vision encoder and projection (native/engines/vit.h) with its own
// thread pool. encode() runs on libuv's pool and returns a Promise.
#include <napi.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "engines/vit.h"
#include "engines/weights_spec.h"
#include "napi/errors.h"
#include "napi/promise_worker.h"
#include "napi/register.h"
#include "napi/spec_views.h"
#include "threadpool.h"

namespace weightmap {

namespace {

struct VitCore {
  std::shared_ptr<const WeightsSpec> spec;  // keeps the mappings behind the model alive
  std::unique_ptr<engines::VitModel> model;
  std::unique_ptr<ThreadPool> pool;
  std::atomic<bool> abort{false};
  int running = 0;  // JS thread only
};

// Canonical names of lib/architectures/moondream.ts; MOON stores these matrices [in,out], and
// the views carry the stored shape.
std::shared_ptr<VitCore> LoadCore(std::shared_ptr<const WeightsSpec> spec, const engines::VitConfig& c, int threads) {
  const WeightsSpec& s = *spec;
  const int64_t D = c.dim, f = c.ffn, P = c.proj_hidden, pin = 3 * c.patch * c.patch;
  engines::VitWeightsHalf w;
  w.patch_w = SpecF16(s, "model.vision.patch_emb.weight", {pin, D});
  w.patch_b = SpecF16(s, "model.vision.patch_emb.bias", {D});
  w.pos = SpecF16(s, "model.vision.pos_emb", {1, c.n_patches, D});
  for (int64_t l = 0; l < c.n_layers; l++) {
    const std::string p = "model.vision.blocks." + std::to_string(l) + ".";
    engines::VitLayerHalf L;
    L.ln1_w = SpecF16(s, p + "ln1.weight", {D});
    L.ln1_b = SpecF16(s, p + "ln1.bias", {D});
    L.qkv_w = SpecF16(s, p + "attn.qkv.weight", {D, 3 * D});
    L.qkv_b = SpecF16(s, p + "attn.qkv.bias", {3 * D});
    L.proj_w = SpecF16(s, p + "attn.proj.weight", {D, D});
    L.proj_b = SpecF16(s, p + "attn.proj.bias", {D});
    L.ln2_w = SpecF16(s, p + "ln2.weight", {D});
    L.ln2_b = SpecF16(s, p + "ln2.bias", {D});
    L.fc1_w = SpecF16(s, p + "mlp.fc1.weight", {D, f});
    L.fc1_b = SpecF16(s, p + "mlp.fc1.bias", {f});
    L.fc2_w = SpecF16(s, p + "mlp.fc2.weight", {f, D});
    L.fc2_b = SpecF16(s, p + "mlp.fc2.bias", {D});
    w.layers.push_back(L);
  }
  w.post_ln_w = SpecF16(s, "model.vision.post_ln.weight", {D});
  w.post_ln_b = SpecF16(s, "model.vision.post_ln.bias", {D});
  w.proj1_w = SpecF16(s, "model.vision.proj_mlp.fc1.weight", {2 * D, P});
  w.proj1_b = SpecF16(s, "model.vision.proj_mlp.fc1.bias", {P});
  w.proj2_w = SpecF16(s, "model.vision.proj_mlp.fc2.weight", {P, c.text_dim});
  w.proj2_b = SpecF16(s, "model.vision.proj_mlp.fc2.bias", {c.text_dim});
  auto core = std::make_shared<VitCore>();
  core->model = std::make_unique<engines::VitModel>(c, w);
  core->spec = std::move(spec);
  core->pool = std::make_unique<ThreadPool>(threads);
  return core;
}

class EncodeWorker : public PromiseWorker {
 public:
  EncodeWorker(Napi::Env env, std::shared_ptr<VitCore> core, std::vector<uint8_t> rgb, bool features)
      : PromiseWorker(env, "weightmap:vit.encode"), core_(std::move(core)), rgb_(std::move(rgb)), want_features_(features) {}

 protected:
  void Execute() override {
    try {
      const engines::VitConfig& c = core_->model->config();
      embeddings_.resize(static_cast<size_t>(c.n_patches * c.text_dim));
      if (want_features_) features_.resize(static_cast<size_t>(c.n_patches * c.dim));
      bool done = core_->model->Encode(*core_->pool, rgb_.data(), want_features_ ? features_.data() : nullptr,
                                       embeddings_.data(), &core_->abort);
      if (!done) Fail(kAbortCode, kAbortMessage);
    } catch (const std::exception& e) {
      FailureInfo f = DescribeFailure(e);
      Fail(f.code, f.message);
    }
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
  void OnOK() override {
    core_->running--;
    PromiseWorker::OnOK();
  }
  void OnError(const Napi::Error& e) override {
    core_->running--;
    PromiseWorker::OnError(e);
  }

 private:
  std::shared_ptr<VitCore> core_;
  std::vector<uint8_t> rgb_;
  bool want_features_;
  std::vector<float> embeddings_, features_;
};

class VitModelWrap : public Napi::ObjectWrap<VitModelWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    exports.Set("VitModel", DefineClass(env, "VitModel",
                                        {InstanceAccessor<&VitModelWrap::Threads>("threads"),
                                         InstanceMethod<&VitModelWrap::Encode>("encode"),
                                         InstanceMethod<&VitModelWrap::Abort>("abort"),
                                         InstanceMethod<&VitModelWrap::Dispose>("dispose")}));
  }

  // new VitModel(spec, config, options?)
  explicit VitModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<VitModelWrap>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[1].IsObject()) ThrowTypeError(env, "VitModel(spec, config, options?): config must be an object");
    Napi::Object cfg = info[1].As<Napi::Object>();
    engines::VitConfig c;
    c.dim = ConfigInt(cfg, "hiddenSize");
    c.n_layers = ConfigInt(cfg, "numLayers");
    c.n_heads = ConfigInt(cfg, "numHeads");
    c.head_dim = ConfigInt(cfg, "headDim");
    c.ffn = ConfigInt(cfg, "intermediateSize");
    c.patch = ConfigInt(cfg, "patchSize");
    c.image_size = ConfigInt(cfg, "imageSize");
    c.n_patches = ConfigInt(cfg, "numPatches");
    c.proj_hidden = ConfigInt(cfg, "projHidden");
    c.text_dim = ConfigInt(cfg, "textHiddenSize");
    c.eps = static_cast<float>(ConfigNumber(cfg, "layerNormEps", 1e-5));
    int threads = ThreadsOption(info.Length() > 2 ? info[2] : env.Undefined());
    try {
      core_ = LoadCore(WeightsSpec::FromValue(info[0]), c, threads);
    } catch (const Napi::Error&) {
      throw;
    } catch (const std::exception& e) {
      ThrowSpecFailure(env, e);
    }
  }

 private:
  std::shared_ptr<VitCore> Core(Napi::Env env) const {
    if (!core_) throw MakeError(env, "ERR_WEIGHTMAP_DISPOSED", "the VitModel was disposed");
    return core_;
  }

  Napi::Value Threads(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), core_ ? core_->pool->size() : 0);
  }

  // encode(rgb: Uint8Array [S·S·3], features: boolean): Promise<{ embeddings, features? }>.
  // One call at a time (abort() stops the running one).
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::shared_ptr<VitCore> core = Core(env);
    if (core->running > 0) throw MakeError(env, "ERR_WEIGHTMAP_BUSY", "encode: the model is still encoding an image");
    if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
      ThrowTypeError(env, "encode(rgb, features): rgb must be a Uint8Array");
    Napi::Uint8Array rgb = info[0].As<Napi::Uint8Array>();
    const engines::VitConfig& c = core->model->config();
    const size_t expected = static_cast<size_t>(c.image_size * c.image_size * 3);
    if (rgb.ElementLength() != expected)
      throw MakeError(env, "ERR_OUT_OF_RANGE", "encode(rgb): rgb must hold " + std::to_string(c.image_size) + "x" +
                                                   std::to_string(c.image_size) + "x3 = " + std::to_string(expected) +
                                                   " bytes, got " + std::to_string(rgb.ElementLength()));
    bool features = info.Length() > 1 && info[1].ToBoolean().Value();
    std::vector<uint8_t> copy(rgb.Data(), rgb.Data() + rgb.ElementLength());
    core->abort.store(false);
    core->running++;
    return (new EncodeWorker(env, core, std::move(copy), features))->Start();
  }

  Napi::Value Abort(const Napi::CallbackInfo& info) {
    if (core_) core_->abort.store(true);
    return info.Env().Undefined();
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (core_) {
      core_->abort.store(true);
      core_.reset();
    }
    return info.Env().Undefined();
  }

  std::shared_ptr<VitCore> core_;
};

void Register(Napi::Env env, Napi::Object exports) { VitModelWrap::Init(env, exports); }

}  // namespace

WEIGHTMAP_REGISTER(Vit, Register);

}  // namespace weightmap
