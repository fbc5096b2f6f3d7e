#include "napi/engine_args.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "napi/errors.h"
#include "napi/mapped_file.h"

namespace weightmap {

namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;  // 2^53 - 1

uint64_t ReadCount(Napi::Env env, Napi::Value v, const std::string& what) {
  if (!v.IsNumber()) ThrowTypeError(env, what + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > kMaxSafeInteger || std::floor(d) != d) ThrowTypeError(env, what + " must be a non-negative integer");
  return static_cast<uint64_t>(d);
}

}  // namespace

std::shared_ptr<WeightsSpec> WeightsSpecFromValue(Napi::Value value) {
  Napi::Env env = value.Env();
  if (!value.IsObject()) ThrowTypeError(env, "weights spec must be an object");
  Napi::Object spec = value.As<Napi::Object>();

  Napi::Value files = spec.Get("files");
  if (!files.IsArray()) ThrowTypeError(env, "spec.files must be an array of MappedFile");
  Napi::Array file_array = files.As<Napi::Array>();
  std::vector<std::shared_ptr<Mapping>> mappings;
  for (uint32_t i = 0; i < file_array.Length(); i++) mappings.push_back(MappedFile::FromValue(file_array.Get(i)));

  Napi::Value tensors = spec.Get("tensors");
  if (!tensors.IsObject()) ThrowTypeError(env, "spec.tensors must be an object");
  Napi::Object tensor_map = tensors.As<Napi::Object>();
  Napi::Array names = tensor_map.GetPropertyNames();
  std::vector<TensorView> views(names.Length());
  for (uint32_t i = 0; i < names.Length(); i++) {
    TensorView& t = views[i];
    t.name = names.Get(i).As<Napi::String>().Utf8Value();
    const std::string& name = t.name;
    Napi::Value desc_value = tensor_map.Get(name);
    if (!desc_value.IsObject()) ThrowTypeError(env, "spec.tensors['" + name + "'] must be an object");
    Napi::Object desc = desc_value.As<Napi::Object>();

    Napi::Value dtype = desc.Get("dtype");
    if (!dtype.IsString()) ThrowTypeError(env, name + ".dtype must be a string");
    t.dtype = dtype.As<Napi::String>().Utf8Value();

    Napi::Value shape = desc.Get("shape");
    if (!shape.IsArray()) ThrowTypeError(env, name + ".shape must be an array");
    Napi::Array dims = shape.As<Napi::Array>();
    for (uint32_t d = 0; d < dims.Length() && d < 5; d++)
      t.shape.push_back(ReadCount(env, dims.Get(d), name + ".shape[" + std::to_string(d) + "]"));

    uint64_t file = ReadCount(env, desc.Get("file"), name + ".file");
    if (file >= mappings.size())
      ThrowTypeError(env, name + ".file is " + std::to_string(file) + " but spec.files has " + std::to_string(mappings.size()) +
                              " entries");
    t.file = static_cast<size_t>(file);
    t.byte_offset = ReadCount(env, desc.Get("byteOffset"), name + ".byteOffset");
    t.byte_length = ReadCount(env, desc.Get("byteLength"), name + ".byteLength");

    Napi::Value transposed = desc.Get("transposed");
    if (!transposed.IsUndefined()) {
      if (!transposed.IsBoolean()) ThrowTypeError(env, name + ".transposed must be a boolean");
      t.transposed = transposed.As<Napi::Boolean>().Value();
    }

    Napi::Value scales = desc.Get("scales");
    if (scales.IsObject()) {
      Napi::Object s = scales.As<Napi::Object>();
      t.has_scales = true;
      t.group = ReadCount(env, s.Get("groupSize"), name + ".scales.groupSize");
      t.scales_offset = ReadCount(env, s.Get("byteOffset"), name + ".scales.byteOffset");
      t.scales_length = ReadCount(env, s.Get("byteLength"), name + ".scales.byteLength");
    }
  }
  // The tensor name of each role the engine asks for (optional: engines that spell their own).
  std::map<std::string, std::string> role_names;
  Napi::Value roles = spec.Get("names");
  if (!roles.IsUndefined()) {
    if (!roles.IsObject()) ThrowTypeError(env, "spec.names must be an object of strings");
    Napi::Object role_map = roles.As<Napi::Object>();
    Napi::Array keys = role_map.GetPropertyNames();
    for (uint32_t i = 0; i < keys.Length(); i++) {
      const std::string role = keys.Get(i).As<Napi::String>().Utf8Value();
      Napi::Value name = role_map.Get(role);
      if (!name.IsString()) ThrowTypeError(env, "spec.names['" + role + "'] must be a string");
      role_names[role] = name.As<Napi::String>().Utf8Value();
    }
  }
  return WeightsSpec::Make(std::move(mappings), views, std::move(role_names));
}

int64_t ReadInt(const Napi::Object& o, const char* key, int64_t lo, int64_t hi) {
  Napi::Env env = o.Env();
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) ThrowTypeError(env, std::string(key) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (std::floor(d) != d || d < static_cast<double>(lo) || d > static_cast<double>(hi))
    throw MakeError(env, "ERR_OUT_OF_RANGE",
                    std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int64_t>(d);
}

double ReadNumber(const Napi::Object& o, const char* key, double fallback) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  return ReadNumber(o, key);
}

double ReadNumber(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsNumber() || !std::isfinite(v.As<Napi::Number>().DoubleValue()))
    ThrowTypeError(o.Env(), std::string(key) + " must be a finite number");
  return v.As<Napi::Number>().DoubleValue();
}

bool ReadBool(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsBoolean()) ThrowTypeError(o.Env(), std::string(key) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

Napi::Object OptionsObject(Napi::Env env, Napi::Value value, const char* what) {
  if (value.IsUndefined() || value.IsNull()) return Napi::Object::New(env);
  if (!value.IsObject()) ThrowTypeError(env, std::string(what) + " must be an object");
  return value.As<Napi::Object>();
}

int ThreadsOption(const Napi::Object& options) {
  if (options.Get("threads").IsUndefined()) return 0;
  return static_cast<int>(ReadInt(options, "threads", 0, 1024));
}

}  // namespace weightmap
