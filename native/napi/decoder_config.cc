// DecoderConfig from JS: one row per field — its name in lib/architectures/decoder.ts's
// DecoderConfig, whether it may be absent (then the member keeps DecoderConfig's initializer, its
// "off" value), and the member it sets with the member's type deciding how it is read.
#include "napi/decoder_config.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "napi/engine_args.h"
#include "napi/errors.h"

namespace weightmap {
namespace decoder {

namespace {

template <typename E>
struct Named {
  const char* name;
  E value;
};

// One table per enum value set, in the order of lib/architectures/decoder.ts's lists (and of the
// error messages).
constexpr Named<KvType> kKvTypes[] = {{"f16", KvType::F16}, {"f32", KvType::F32}, {"q8_0", KvType::Q8_0}};
constexpr Named<Activation> kActivations[] = {{"silu", Activation::Silu}, {"gelu_tanh", Activation::GeluTanh}};
constexpr Named<RopePairing> kRopePairings[] = {{"half", RopePairing::Half}, {"interleaved", RopePairing::Interleaved}};
constexpr Named<WeightQuant> kQuants[] = {{"none", WeightQuant::Keep}, {"q8_0", WeightQuant::Q8}, {"f32", WeightQuant::F32}};

// `value` as one of `names` (TypeError naming `what` and listing them otherwise).
template <typename E, size_t N>
E ParseEnum(Napi::Env env, Napi::Value value, const char* what, const Named<E> (&names)[N]) {
  const std::string got = value.IsString() ? value.As<Napi::String>().Utf8Value() : "";
  for (const Named<E>& n : names)
    if (got == n.name) return n.value;
  std::string expected;  // 'a', 'b' or 'c'
  for (size_t i = 0; i < N; i++) expected += (i == 0 ? "'" : i + 1 == N ? " or '" : ", '") + std::string(names[i].name) + "'";
  ThrowTypeError(env, std::string(what) + " must be " + expected);
  return names[0].value;  // not reached: ThrowTypeError throws
}

template <typename E, size_t N>
E ReadEnum(const Napi::Object& o, const char* key, const Named<E> (&names)[N]) {
  return ParseEnum(o.Env(), o.Get(key), key, names);
}

const auto& NamesOf(Activation) { return kActivations; }
const auto& NamesOf(RopePairing) { return kRopePairings; }

std::vector<float> ReadFloats(const Napi::Object& o, const char* key) {
  Napi::Value value = o.Get(key);
  const std::string what = std::string(key) + " must be an array of numbers";
  if (!value.IsArray()) ThrowTypeError(o.Env(), what);
  Napi::Array a = value.As<Napi::Array>();
  if (a.Length() > (1u << 16)) ThrowTypeError(o.Env(), std::string(key) + " is too long");
  std::vector<float> out;
  for (uint32_t i = 0; i < a.Length(); i++) {
    Napi::Value v = a.Get(i);
    if (!v.IsNumber()) ThrowTypeError(o.Env(), what);
    out.push_back(v.As<Napi::Number>().FloatValue());
  }
  return out;
}

// Reads o[key] into c.*m, as the member's type says (an integer in [lo, hi] for int64_t).
template <auto m, int64_t lo = 0, int64_t hi = 0>
void Member(const Napi::Object& o, const char* key, DecoderConfig& c) {
  using T = std::remove_reference_t<decltype(c.*m)>;
  if constexpr (std::is_same_v<T, int64_t>) c.*m = ReadInt(o, key, lo, hi);
  else if constexpr (std::is_same_v<T, double>) c.*m = ReadNumber(o, key);
  else if constexpr (std::is_same_v<T, float>) c.*m = static_cast<float>(ReadNumber(o, key));
  else if constexpr (std::is_same_v<T, bool>) c.*m = ReadBool(o, key);
  else if constexpr (std::is_same_v<T, std::vector<float>>) c.*m = ReadFloats(o, key);
  else c.*m = ReadEnum(o, key, NamesOf(T{}));
}

struct Field {
  const char* name;
  bool optional;
  void (*read)(const Napi::Object& o, const char* key, DecoderConfig& c);
};

constexpr int64_t kMax = int64_t{1} << 31;
constexpr bool kRequired = false, kOptional = true;
using C = DecoderConfig;

// DecoderConfig::Validate checks what the ranges here do not.
constexpr Field kFields[] = {
    {"hiddenSize", kRequired, Member<&C::dim, 1, kMax>},
    {"intermediateSize", kRequired, Member<&C::intermediate, 1, kMax>},
    {"numLayers", kRequired, Member<&C::n_layers, 1, 1 << 16>},
    {"numHeads", kRequired, Member<&C::n_heads, 1, 1 << 16>},
    {"numKvHeads", kRequired, Member<&C::n_kv_heads, 1, 1 << 16>},
    {"headDim", kRequired, Member<&C::head_dim, 1, 1 << 16>},
    {"vocabSize", kRequired, Member<&C::vocab, 1, kMax - 1>},
    {"maxSeqLen", kRequired, Member<&C::max_seq_len, 1, kMax>},
    {"rmsNormEps", kRequired, Member<&C::eps>},
    {"ropeTheta", kRequired, Member<&C::theta>},
    {"ropePairing", kRequired, Member<&C::pairing>},
    {"tieWordEmbeddings", kRequired, Member<&C::tied>},
    {"qkNorm", kRequired, Member<&C::qk_norm>},
    {"qkvBias", kOptional, Member<&C::qkv_bias>},
    {"ropeFreqFactors", kOptional, Member<&C::rope_freqs>},
    // Mistral and Gemma 3 (absent: Llama's behaviour).
    {"slidingWindow", kOptional, Member<&C::sliding_window, 0, kMax>},
    {"slidingWindowPattern", kOptional, Member<&C::swa_pattern, 0, 1 << 16>},
    {"ropeLocalTheta", kOptional, Member<&C::theta_local>},
    {"normWeightOffset", kOptional, Member<&C::norm_offset>},
    {"sandwichNorms", kOptional, Member<&C::sandwich_norms>},
    {"activation", kOptional, Member<&C::activation>},
    {"embeddingScale", kOptional, Member<&C::embed_scale>},
    {"queryPreAttnScalar", kOptional, Member<&C::attn_scalar>},
    // Granite.
    {"attentionScale", kOptional, Member<&C::attn_scale>},
    {"residualScale", kOptional, Member<&C::residual_scale>},
    {"logitsScaling", kOptional, Member<&C::logits_scaling>},
    // Phi-4-mini (partial rotary).
    {"ropeDim", kOptional, Member<&C::rope_dim, 2, 1 << 16>},
    // SmolLM3.
    {"noRopeLayerInterval", kOptional, Member<&C::no_rope_interval, 0, 1 << 16>},
    // Qwen3-MoE (DecoderConfig::Validate bounds the expert counts).
    {"numExperts", kOptional, Member<&C::n_experts, 0, kMax>},
    {"numExpertsPerToken", kOptional, Member<&C::n_experts_used, 0, kMax>},
    {"expertIntermediateSize", kOptional, Member<&C::expert_intermediate, 1, kMax>},
    {"normTopkProb", kOptional, Member<&C::norm_topk>},
    // gpt-oss.
    {"expertBiases", kOptional, Member<&C::expert_bias>},
    {"swigluLimit", kOptional, Member<&C::swiglu_limit>},
    {"attentionSinks", kOptional, Member<&C::attn_sinks>},
    {"bidirectional", kOptional, Member<&C::bidirectional>},
    {"attentionOutputBias", kOptional, Member<&C::o_bias>},
    {"ropeYarnFactor", kOptional, Member<&C::yarn_factor>},
    {"ropeYarnOriginalContext", kOptional, Member<&C::yarn_orig_ctx, 1, kMax>},
    {"ropeYarnBetaFast", kOptional, Member<&C::yarn_beta_fast>},
    {"ropeYarnBetaSlow", kOptional, Member<&C::yarn_beta_slow>},
    {"ropeAttentionFactor", kOptional, Member<&C::yarn_attn_factor>},
    {"ropeYarnUnroundedDims", kOptional, Member<&C::yarn_unrounded>},
};

template <typename E, size_t N>
Napi::Array NameArray(Napi::Env env, const Named<E> (&names)[N]) {
  Napi::Array out = Napi::Array::New(env, N);
  for (uint32_t i = 0; i < N; i++) out.Set(i, names[i].name);
  return out;
}

}  // namespace

DecoderConfig ParseConfig(Napi::Value value) {
  if (!value.IsObject()) ThrowTypeError(value.Env(), "config must be an object");
  Napi::Object o = value.As<Napi::Object>();
  DecoderConfig c;
  for (const Field& f : kFields)
    if (!f.optional || !o.Get(f.name).IsUndefined()) f.read(o, f.name, c);
  return c;
}

DecoderOptions ParseOptions(Napi::Env env, Napi::Value value) {
  DecoderOptions options;
  Napi::Object o = OptionsObject(env, value, "options");
  options.threads = ThreadsOption(o);
  if (!o.Get("groupSize").IsUndefined()) options.group_size = static_cast<int>(ReadInt(o, "groupSize", 1, 4096));
  // The layer range of a pipeline stage (checked against the config by DecoderModel::Load).
  if (!o.Get("firstLayer").IsUndefined()) options.first_layer = ReadInt(o, "firstLayer", 0, 1 << 16);
  if (!o.Get("endLayer").IsUndefined()) options.end_layer = ReadInt(o, "endLayer", 1, 1 << 16);
  if (!o.Get("quant").IsUndefined()) options.quant = ReadEnum(o, "quant", kQuants);
  return options;
}

KvType ParseKvType(Napi::Env env, Napi::Value value, KvType fallback) {
  return value.IsUndefined() ? fallback : ParseEnum(env, value, "kvCache", kKvTypes);
}

Napi::Object DecoderNames(Napi::Env env) {
  Napi::Array fields = Napi::Array::New(env, std::size(kFields));
  for (uint32_t i = 0; i < std::size(kFields); i++) fields.Set(i, kFields[i].name);
  Napi::Object out = Napi::Object::New(env);
  out.Set("configFields", fields);
  out.Set("kvCacheTypes", NameArray(env, kKvTypes));
  out.Set("activations", NameArray(env, kActivations));
  out.Set("ropePairings", NameArray(env, kRopePairings));
  out.Set("quants", NameArray(env, kQuants));
  return out;
}

}  // namespace decoder
}  // namespace weightmap
