// JS class BertEncoder (binding.d.ts): a BERT sentence encoder over mapped weights
// (native/engines/bert.h). Loading and encoding run on libuv's pool and return promises; an
// encode can be aborted through the `abort` function it returns; dispose() drops this handle's
// hold on the model, which calls still running keep until they settle.
#include <napi.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engines/bert.h"
#include "engines/weights_spec.h"
#include "kernels/kernels.h"
#include "napi/errors.h"
#include "napi/promise_worker.h"
#include "napi/register.h"

namespace weightmap {
namespace {

int64_t ConfigInt(Napi::Object config, const char* key) {
  Napi::Value v = config.Get(key);
  if (!v.IsNumber()) ThrowTypeError(config.Env(), std::string("config.") + key + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > 9007199254740991.0 || std::floor(d) != d)
    ThrowTypeError(config.Env(), std::string("config.") + key + " must be a non-negative integer");
  return static_cast<int64_t>(d);
}

bert::Config ParseConfig(Napi::Value value) {
  Napi::Env env = value.Env();
  if (!value.IsObject()) ThrowTypeError(env, "options.config must be a BertConfig object");
  Napi::Object o = value.As<Napi::Object>();
  bert::Config c;
  c.hidden = ConfigInt(o, "hiddenSize");
  c.layers = ConfigInt(o, "numLayers");
  c.heads = ConfigInt(o, "numHeads");
  c.intermediate = ConfigInt(o, "intermediateSize");
  c.vocab = ConfigInt(o, "vocabSize");
  c.max_positions = ConfigInt(o, "maxPositionEmbeddings");
  c.type_vocab = ConfigInt(o, "typeVocabSize");
  Napi::Value eps = o.Get("layerNormEps");
  if (!eps.IsNumber()) ThrowTypeError(env, "config.layerNormEps must be a number");
  c.eps = eps.As<Napi::Number>().FloatValue();
  Napi::Value act = o.Get("hiddenAct");
  const std::string act_name = act.IsString() ? act.As<Napi::String>().Utf8Value() : "";
  if (act_name != "gelu" && act_name != "gelu_tanh") ThrowTypeError(env, "config.hiddenAct must be 'gelu' or 'gelu_tanh'");
  c.gelu_tanh = act_name == "gelu_tanh";
  return c;
}

class LoadWorker : public PromiseWorker {
 public:
  LoadWorker(Napi::Env env, const Napi::FunctionReference* ctor, bert::Config config,
             std::shared_ptr<const WeightsSpec> spec, bert::Options options)
      : PromiseWorker(env, "weightmap:bert-load"), ctor_(ctor), config_(config), spec_(std::move(spec)), options_(options) {}

 protected:
  void Execute() override {
    try {
      model_ = bert::Model::Load(config_, spec_, options_);
    } catch (const SpecError& e) {
      Fail(e.code(), e.what());
    } catch (const std::exception& e) {
      Fail("ERR_WEIGHTMAP_NATIVE", e.what());
    }
  }

  Napi::Value Result(Napi::Env env) override {
    auto* holder = new std::shared_ptr<bert::Model>(std::move(model_));
    auto external = Napi::External<std::shared_ptr<bert::Model>>::New(
        env, holder, [](Napi::Env, std::shared_ptr<bert::Model>* p) { delete p; });
    return ctor_->New({external});
  }

 private:
  const Napi::FunctionReference* ctor_;
  bert::Config config_;
  std::shared_ptr<const WeightsSpec> spec_;
  bert::Options options_;
  std::shared_ptr<bert::Model> model_;
};

class EncodeWorker : public PromiseWorker {
 public:
  EncodeWorker(Napi::Env env, std::shared_ptr<const bert::Model> model, std::vector<int32_t> ids,
               std::vector<int32_t> lengths, bert::Pooling pooling, bool normalize,
               std::shared_ptr<std::atomic<bool>> abort)
      : PromiseWorker(env, "weightmap:bert-encode"),
        model_(std::move(model)),
        ids_(std::move(ids)),
        lengths_(std::move(lengths)),
        pooling_(pooling),
        normalize_(normalize),
        abort_(std::move(abort)) {}

 protected:
  void Execute() override {
    try {
      out_.resize(lengths_.size() * model_->config().hidden);
      model_->Encode(ids_.data(), lengths_.data(), static_cast<int64_t>(lengths_.size()), pooling_, normalize_,
                     out_.data(), *abort_);
    } catch (const bert::Aborted& e) {
      Fail("ABORT_ERR", e.what());
    } catch (const std::bad_alloc&) {
      Fail("ERR_WEIGHTMAP_NATIVE", "out of memory for a batch of " + std::to_string(ids_.size()) + " tokens");
    } catch (const std::exception& e) {
      Fail("ERR_WEIGHTMAP_NATIVE", e.what());
    }
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Float32Array out = Napi::Float32Array::New(env, out_.size());
    if (!out_.empty()) std::memcpy(out.Data(), out_.data(), out_.size() * sizeof(float));
    return out;
  }

 private:
  std::shared_ptr<const bert::Model> model_;
  std::vector<int32_t> ids_;      // [Σ lengths] packed sequences
  std::vector<int32_t> lengths_;  // [n_seq]
  bert::Pooling pooling_;
  bool normalize_;
  std::shared_ptr<std::atomic<bool>> abort_;
  std::vector<float> out_;  // [n_seq, H]
};

class BertEncoder : public Napi::ObjectWrap<BertEncoder> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function ctor = DefineClass(
        env, "BertEncoder",
        {
            InstanceMethod<&BertEncoder::Encode>("encode"),
            InstanceMethod<&BertEncoder::Dispose>("dispose"),
            InstanceAccessor<&BertEncoder::Disposed>("disposed"),
            InstanceAccessor<&BertEncoder::Info>("info"),
        });
    // The constructor outlives every BertEncoder.load() of this environment.
    auto* ref = new Napi::FunctionReference(Napi::Persistent(ctor));
    env.AddCleanupHook([ref]() { delete ref; });
    ctor.Set("load", Napi::Function::New(env, &BertEncoder::Load, "load", ref));
    exports.Set("BertEncoder", ctor);
  }

  // Called only by LoadWorker with the loaded model.
  explicit BertEncoder(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BertEncoder>(info) {
    if (info.Length() != 1 || !info[0].IsExternal())
      ThrowTypeError(info.Env(), "BertEncoder cannot be constructed directly; use BertEncoder.load()");
    model_ = *info[0].As<Napi::External<std::shared_ptr<bert::Model>>>().Data();
  }

 private:
  // BertEncoder.load({ config, weights, threads?, quant? }) -> Promise<BertEncoder>
  static Napi::Value Load(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto* ctor = static_cast<const Napi::FunctionReference*>(info.Data());
    if (!info[0].IsObject()) ThrowTypeError(env, "BertEncoder.load expects an options object");
    Napi::Object options = info[0].As<Napi::Object>();
    bert::Config config = ParseConfig(options.Get("config"));
    bert::Options opts;
    Napi::Value threads = options.Get("threads");
    if (!threads.IsUndefined()) {
      if (!threads.IsNumber()) ThrowTypeError(env, "options.threads must be a number");
      const double t = threads.As<Napi::Number>().DoubleValue();
      if (!(t >= 0 && t <= 1024) || std::floor(t) != t) ThrowTypeError(env, "options.threads must be an integer in [0, 1024]");
      opts.threads = static_cast<int>(t);
    }
    Napi::Value quant = options.Get("quant");
    if (!quant.IsUndefined()) {
      const std::string q = quant.IsString() ? quant.As<Napi::String>().Utf8Value() : "";
      if (q == "q8_0") opts.quant = bert::Quant::Q8_0;
      else if (q == "int8") opts.quant = bert::Quant::Int8;
      else if (q != "f32") ThrowTypeError(env, "options.quant must be 'f32', 'int8' or 'q8_0'");
    }
    std::shared_ptr<const WeightsSpec> spec;
    try {
      spec = WeightsSpec::FromValue(options.Get("weights"));
    } catch (const SpecError& e) {
      Napi::Promise::Deferred d = Napi::Promise::Deferred::New(env);
      d.Reject(MakeError(env, e.code(), e.what()).Value());
      return d.Promise();
    }
    return (new LoadWorker(env, ctor, config, std::move(spec), opts))->Start();
  }

  // encode(ids: Int32Array, lengths: Int32Array, pooling, normalize) -> { promise, abort }
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!model_) throw MakeError(env, "ERR_WEIGHTMAP_DISPOSED", "BertEncoder was disposed");
    if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(env, "ids must be an Int32Array");
    if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      ThrowTypeError(env, "lengths must be an Int32Array");
    Napi::Int32Array ids = info[0].As<Napi::Int32Array>();
    Napi::Int32Array lengths = info[1].As<Napi::Int32Array>();
    const std::string pooling_name = info[2].IsString() ? info[2].As<Napi::String>().Utf8Value() : "";
    bert::Pooling pooling = bert::Pooling::Mean;
    if (pooling_name == "mean")
      pooling = bert::Pooling::Mean;
    else if (pooling_name == "cls")
      pooling = bert::Pooling::Cls;
    else if (pooling_name == "max")
      pooling = bert::Pooling::Max;
    else
      ThrowTypeError(env, "pooling must be 'mean', 'cls' or 'max'");
    if (!info[3].IsBoolean()) ThrowTypeError(env, "normalize must be a boolean");

    const bert::Config& c = model_->config();
    auto range_error = [&](const std::string& message) {
      Napi::Error e = Napi::RangeError::New(env, message);
      e.Set("code", Napi::String::New(env, "ERR_OUT_OF_RANGE"));
      throw e;
    };
    std::vector<int32_t> len_copy(lengths.Data(), lengths.Data() + lengths.ElementLength());
    uint64_t total = 0;
    for (size_t i = 0; i < len_copy.size(); i++) {
      if (len_copy[i] < 1 || len_copy[i] > c.max_positions)
        range_error("sequence " + std::to_string(i) + " has " + std::to_string(len_copy[i]) +
                    " tokens; the model takes 1 to " + std::to_string(c.max_positions));
      total += static_cast<uint64_t>(len_copy[i]);
    }
    if (total != ids.ElementLength())
      range_error("lengths add up to " + std::to_string(total) + " but there are " + std::to_string(ids.ElementLength()) + " ids");
    std::vector<int32_t> id_copy(ids.Data(), ids.Data() + ids.ElementLength());
    for (size_t i = 0; i < id_copy.size(); i++)
      if (id_copy[i] < 0 || id_copy[i] >= c.vocab)
        range_error("token id " + std::to_string(id_copy[i]) + " at " + std::to_string(i) + " is outside the vocabulary [0, " +
                    std::to_string(c.vocab) + ")");

    auto abort = std::make_shared<std::atomic<bool>>(false);
    auto* worker = new EncodeWorker(env, model_, std::move(id_copy), std::move(len_copy), pooling,
                                    info[3].As<Napi::Boolean>().Value(), abort);
    Napi::Object job = Napi::Object::New(env);
    job.Set("promise", worker->Start());
    job.Set("abort", Napi::Function::New(env, [abort](const Napi::CallbackInfo&) { abort->store(true); }, "abort"));
    return job;
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    model_.reset();
    return info.Env().Undefined();
  }

  Napi::Value Disposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !model_); }

  // { hiddenSize, threads, quant, isa, loadMs, copiedBytes, convertedMatrices }
  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!model_) throw MakeError(env, "ERR_WEIGHTMAP_DISPOSED", "BertEncoder was disposed");
    Napi::Object o = Napi::Object::New(env);
    o.Set("hiddenSize", Napi::Number::New(env, static_cast<double>(model_->config().hidden)));
    o.Set("threads", Napi::Number::New(env, model_->threads()));
    const bert::Quant q = model_->quant();
    o.Set("quant", Napi::String::New(env, q == bert::Quant::Int8 ? "int8" : q == bert::Quant::Q8_0 ? "q8_0" : "f32"));
    o.Set("isa", Napi::String::New(env, kernels::Active().isa));
    o.Set("loadMs", Napi::Number::New(env, model_->load_ms()));
    o.Set("copiedBytes", Napi::Number::New(env, static_cast<double>(model_->cost().copied_bytes)));
    o.Set("convertedMatrices", Napi::Number::New(env, model_->cost().converted));
    return o;
  }

  std::shared_ptr<bert::Model> model_;
};

void Register(Napi::Env env, Napi::Object exports) { BertEncoder::Init(env, exports); }

}  // namespace
}  // namespace weightmap

WEIGHTMAP_REGISTER(bert_encoder, weightmap::Register);
