// JS class BertEncoder (binding.d.ts): a BERT sentence encoder over mapped weights
// (native/engines/bert.h). Loading and encoding run on libuv's pool and return promises; an
// encode can be aborted through the `abort` function it returns; dispose() drops this handle's
// hold on the model, which calls still running keep until they settle.
#include <napi.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engines/bert.h"
#include "kernels/kernels.h"
#include "napi/engine_args.h"
#include "napi/model_wrap.h"
#include "napi/register.h"

namespace weightmap {
namespace {

bert::Config ParseConfig(Napi::Env env, Napi::Value value) {
  Napi::Object o = OptionsObject(env, value, "config");
  constexpr int64_t kMax = int64_t{1} << 31;
  bert::Config c;
  c.hidden = ReadInt(o, "hiddenSize", 0, kMax);
  c.layers = ReadInt(o, "numLayers", 0, kMax);
  c.heads = ReadInt(o, "numHeads", 0, kMax);
  c.intermediate = ReadInt(o, "intermediateSize", 0, kMax);
  c.vocab = ReadInt(o, "vocabSize", 0, kMax);
  c.max_positions = ReadInt(o, "maxPositionEmbeddings", 0, kMax);
  c.type_vocab = ReadInt(o, "typeVocabSize", 0, kMax);
  if (!o.Get("positionOffset").IsUndefined()) c.position_offset = ReadInt(o, "positionOffset", 0, kMax);
  c.eps = static_cast<float>(ReadNumber(o, "layerNormEps"));
  Napi::Value act = o.Get("hiddenAct");
  const std::string act_name = act.IsString() ? act.As<Napi::String>().Utf8Value() : "";
  if (act_name != "gelu" && act_name != "gelu_tanh" && act_name != "swiglu") ThrowTypeError(env, "config.hiddenAct must be 'gelu', 'gelu_tanh' or 'swiglu'");
  c.gelu_tanh = act_name == "gelu_tanh";
  c.swiglu = act_name == "swiglu";
  // nomic-bert: rotary positions with this base instead of a position table.
  if (!o.Get("ropeTheta").IsUndefined()) {
    c.rotary = true;
    c.rope_base = static_cast<float>(ReadNumber(o, "ropeTheta"));
  }
  // The classification head of a cross-encoder: absent for an embedder.
  if (!o.Get("numLabels").IsUndefined()) c.labels = ReadInt(o, "numLabels", 0, int64_t{1} << 20);
  if (!o.Get("pooler").IsUndefined()) c.pooler = ReadBool(o, "pooler");
  return c;
}

// Encode (pooled vectors, [n_seq, H]) or, with `classify`, the head's logits ([n_seq, labels]).
class EncodeWorker : public EngineWorker {
 public:
  EncodeWorker(Napi::Env env, std::shared_ptr<const bert::Model> model, std::vector<int32_t> ids,
               std::vector<int32_t> lengths, bert::Pooling pooling, bool normalize,
               std::shared_ptr<std::atomic<bool>> abort, bool classify = false, std::vector<int32_t> types = {})
      : EngineWorker(env, classify ? "weightmap:bert-classify" : "weightmap:bert-encode"),
        model_(std::move(model)),
        ids_(std::move(ids)),
        lengths_(std::move(lengths)),
        pooling_(pooling),
        normalize_(normalize),
        abort_(std::move(abort)),
        classify_(classify),
        types_(std::move(types)) {}

 protected:
  void Run() override {
    const int64_t n = static_cast<int64_t>(lengths_.size());
    if (classify_) {
      out_.resize(lengths_.size() * model_->config().labels);
      model_->Classify(ids_.data(), types_.empty() ? nullptr : types_.data(), lengths_.data(), n, out_.data(), *abort_);
      return;
    }
    out_.resize(lengths_.size() * model_->config().hidden);
    model_->Encode(ids_.data(), lengths_.data(), n, pooling_, normalize_, out_.data(), *abort_);
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
  bool classify_;
  std::vector<int32_t> types_;  // [Σ lengths] or empty (all 0)
  std::vector<float> out_;  // [n_seq, H] or [n_seq, labels]
};

class BertEncoder : public ModelWrap<BertEncoder, bert::Model> {
 public:
  static constexpr const char* kName = "BertEncoder";

  static void Init(Napi::Env env, Napi::Object exports) {
    Define(env, exports,
           {InstanceMethod<&BertEncoder::Encode>("encode"), InstanceMethod<&BertEncoder::Classify>("classify"),
            InstanceAccessor<&BertEncoder::Info>("info")},
           &BertEncoder::Load);
  }

  using ModelWrap::ModelWrap;

 private:
  // BertEncoder.load(spec, config, options?: { threads?, quant? }): Promise<BertEncoder>
  static Napi::Value Load(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    bert::Config config = ParseConfig(env, info.Length() > 1 ? info[1] : env.Undefined());
    Napi::Object options = OptionsObject(env, info.Length() > 2 ? info[2] : env.Undefined(), "options");
    bert::Options opts;
    opts.threads = ThreadsOption(options);
    Napi::Value quant = options.Get("quant");
    if (!quant.IsUndefined()) {
      const std::string q = quant.IsString() ? quant.As<Napi::String>().Utf8Value() : "";
      if (q == "q8_0") opts.quant = bert::Quant::Q8_0;
      else if (q == "int8") opts.quant = bert::Quant::Int8;
      else if (q != "f32") ThrowTypeError(env, "options.quant must be 'f32', 'int8' or 'q8_0'");
    }
    const std::shared_ptr<const WeightsSpec> spec = LoadSpecArgument(info);
    return StartLoad<bert::Model>(env, kName, [config, spec, opts] { return bert::Model::Load(config, spec, opts); });
  }

  // encode(ids: Int32Array, lengths: Int32Array, pooling, normalize) -> { promise, abort }
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::shared_ptr<const bert::Model> model = Live(env)->model;
    if (!IsInt32Array(info[0])) ThrowTypeError(env, "ids must be an Int32Array");
    if (!IsInt32Array(info[1])) ThrowTypeError(env, "lengths must be an Int32Array");
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

    std::vector<int32_t> id_copy, len_copy;
    CopyBatch(env, model->config(), ids, lengths, &id_copy, &len_copy);
    auto abort = std::make_shared<std::atomic<bool>>(false);
    return Job(env, new EncodeWorker(env, model, std::move(id_copy), std::move(len_copy), pooling,
                                     info[3].As<Napi::Boolean>().Value(), abort),
               abort);
  }

  // classify(ids: Int32Array, types: Int32Array | null, lengths: Int32Array) -> { promise, abort }
  Napi::Value Classify(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::shared_ptr<const bert::Model> model = Live(env)->model;
    const bert::Config& c = model->config();
    if (c.labels == 0) ThrowTypeError(env, "this encoder was loaded without a classification head (numLabels 0)");
    if (!IsInt32Array(info[0])) ThrowTypeError(env, "ids must be an Int32Array");
    const bool has_types = !info[1].IsNull() && !info[1].IsUndefined();
    if (has_types && !IsInt32Array(info[1])) ThrowTypeError(env, "types must be an Int32Array or null");
    if (!IsInt32Array(info[2])) ThrowTypeError(env, "lengths must be an Int32Array");
    std::vector<int32_t> id_copy, len_copy, type_copy;
    Napi::Int32Array ids = info[0].As<Napi::Int32Array>();
    CopyBatch(env, c, ids, info[2].As<Napi::Int32Array>(), &id_copy, &len_copy);
    if (has_types) {
      Napi::Int32Array types = info[1].As<Napi::Int32Array>();
      if (types.ElementLength() != ids.ElementLength())
        ThrowRange(env, "there are " + std::to_string(types.ElementLength()) + " token types for " + std::to_string(ids.ElementLength()) + " ids");
      type_copy.assign(types.Data(), types.Data() + types.ElementLength());
      for (size_t i = 0; i < type_copy.size(); i++)
        if (type_copy[i] < 0 || type_copy[i] >= c.type_vocab)
          ThrowRange(env, "token type " + std::to_string(type_copy[i]) + " at " + std::to_string(i) + " is outside [0, " +
                              std::to_string(c.type_vocab) + ")");
    }
    auto abort = std::make_shared<std::atomic<bool>>(false);
    return Job(env, new EncodeWorker(env, model, std::move(id_copy), std::move(len_copy), bert::Pooling::Cls, false, abort, true,
                                     std::move(type_copy)),
               abort);
  }

  static bool IsInt32Array(Napi::Value v) {
    return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array;
  }

  // Copies a packed batch, checking every length against the positions and every id against the vocabulary.
  static void CopyBatch(Napi::Env env, const bert::Config& c, Napi::Int32Array ids, Napi::Int32Array lengths,
                        std::vector<int32_t>* id_copy, std::vector<int32_t>* len_copy) {
    len_copy->assign(lengths.Data(), lengths.Data() + lengths.ElementLength());
    uint64_t total = 0;
    for (size_t i = 0; i < len_copy->size(); i++) {
      const int32_t n = (*len_copy)[i];
      if (n < 1 || n > c.max_sequence())
        ThrowRange(env, "sequence " + std::to_string(i) + " has " + std::to_string(n) + " tokens; the model takes 1 to " +
                            std::to_string(c.max_sequence()));
      total += static_cast<uint64_t>(n);
    }
    if (total != ids.ElementLength())
      ThrowRange(env, "lengths add up to " + std::to_string(total) + " but there are " + std::to_string(ids.ElementLength()) + " ids");
    id_copy->assign(ids.Data(), ids.Data() + ids.ElementLength());
    for (size_t i = 0; i < id_copy->size(); i++)
      if ((*id_copy)[i] < 0 || (*id_copy)[i] >= c.vocab)
        ThrowRange(env, "token id " + std::to_string((*id_copy)[i]) + " at " + std::to_string(i) + " is outside the vocabulary [0, " +
                            std::to_string(c.vocab) + ")");
  }

  static Napi::Object Job(Napi::Env env, EncodeWorker* worker, std::shared_ptr<std::atomic<bool>> abort) {
    Napi::Object job = Napi::Object::New(env);
    job.Set("promise", worker->Start());
    job.Set("abort", Napi::Function::New(env, [abort](const Napi::CallbackInfo&) { abort->store(true); }, "abort"));
    return job;
  }

  // { hiddenSize, threads, quant, isa, loadMs, copiedBytes, convertedMatrices }
  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const bert::Model& m = *Live(env)->model;
    Napi::Object o = Napi::Object::New(env);
    o.Set("hiddenSize", Napi::Number::New(env, static_cast<double>(m.config().hidden)));
    o.Set("threads", Napi::Number::New(env, m.threads()));
    const bert::Quant q = m.quant();
    o.Set("quant", Napi::String::New(env, q == bert::Quant::Int8 ? "int8" : q == bert::Quant::Q8_0 ? "q8_0" : "f32"));
    o.Set("isa", Napi::String::New(env, kernels::Active().isa));
    o.Set("loadMs", Napi::Number::New(env, m.load_ms()));
    o.Set("copiedBytes", Napi::Number::New(env, static_cast<double>(m.cost().copied_bytes)));
    o.Set("convertedMatrices", Napi::Number::New(env, m.cost().converted));
    o.Set("numLabels", Napi::Number::New(env, static_cast<double>(m.config().labels)));
    return o;
  }
};

void Register(Napi::Env env, Napi::Object exports) { BertEncoder::Init(env, exports); }

}  // namespace
}  // namespace weightmap

WEIGHTMAP_REGISTER(bert_encoder, weightmap::Register);
