#include "engines/weights_spec.h"

#include <cmath>
#include <sstream>

#include "kernels/ggml_blocks.h"
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

DType ParseDType(const std::string& name, const std::string& tensor, kernels::BlockType* block) {
  if (name == "f32") return DType::F32;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  if (name == "q8_0") return DType::Q8_0;
  if (name == "ggml_q8_0") return DType::GgmlQ8_0;
  if (name.rfind("ggml_", 0) == 0 && kernels::BlockTypeFromName(name.c_str() + 5, block)) return DType::GgmlBlocks;
  throw SpecError("BAD_DTYPE", "tensor " + tensor + " has dtype " + name +
                                   ", which the engine cannot use (f32, f16, bf16, q8_0, ggml_q8_0 and the other "
                                   "ggml block types of kernels/ggml_blocks.h)");
}

// Bytes the values of a tensor of `numel` elements take (scales excluded for Q8_0).
uint64_t DataBytes(DType dtype, kernels::BlockType block, uint64_t numel) {
  switch (dtype) {
    case DType::F32: return numel * 4;
    case DType::F16:
    case DType::BF16: return numel * 2;
    case DType::Q8_0: return numel;
    case DType::GgmlQ8_0: return numel / 32 * 34;
    case DType::GgmlBlocks: return numel / kernels::InfoOf(block).values * kernels::InfoOf(block).bytes;
  }
  return 0;
}

}  // namespace

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::Q8_0: return "q8_0";
    case DType::GgmlQ8_0: return "ggml_q8_0";
    case DType::GgmlBlocks: return "ggml blocks";
  }
  return "?";
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < shape.size(); i++) s << (i ? ", " : "") << shape[i];
  s << ']';
  return s.str();
}

std::string TensorRef::Describe() const {
  const std::string type = dtype == DType::GgmlBlocks ? std::string("ggml_") + kernels::InfoOf(block).name : DTypeName(dtype);
  return name + " " + ShapeString(shape) + " " + type;
}

std::shared_ptr<WeightsSpec> WeightsSpec::FromValue(Napi::Value value) {
  Napi::Env env = value.Env();
  if (!value.IsObject()) ThrowTypeError(env, "weights spec must be an object");
  Napi::Object spec = value.As<Napi::Object>();
  auto out = std::make_shared<WeightsSpec>();

  Napi::Value files = spec.Get("files");
  if (!files.IsArray()) ThrowTypeError(env, "spec.files must be an array of MappedFile");
  Napi::Array file_array = files.As<Napi::Array>();
  for (uint32_t i = 0; i < file_array.Length(); i++) out->mappings_.push_back(MappedFile::FromValue(file_array.Get(i)));

  Napi::Value tensors = spec.Get("tensors");
  if (!tensors.IsObject()) ThrowTypeError(env, "spec.tensors must be an object");
  Napi::Object tensor_map = tensors.As<Napi::Object>();
  Napi::Array names = tensor_map.GetPropertyNames();
  for (uint32_t i = 0; i < names.Length(); i++) {
    std::string name = names.Get(i).As<Napi::String>().Utf8Value();
    Napi::Value desc_value = tensor_map.Get(name);
    if (!desc_value.IsObject()) ThrowTypeError(env, "spec.tensors['" + name + "'] must be an object");
    Napi::Object desc = desc_value.As<Napi::Object>();
    TensorRef t;
    t.name = name;

    Napi::Value dtype = desc.Get("dtype");
    if (!dtype.IsString()) ThrowTypeError(env, name + ".dtype must be a string");
    t.dtype = ParseDType(dtype.As<Napi::String>().Utf8Value(), name, &t.block);

    Napi::Value shape = desc.Get("shape");
    if (!shape.IsArray()) ThrowTypeError(env, name + ".shape must be an array");
    Napi::Array dims = shape.As<Napi::Array>();
    if (dims.Length() == 0 || dims.Length() > 4)
      throw SpecError("SHAPE_MISMATCH", "tensor " + name + " has rank " + std::to_string(dims.Length()) + " (1 to 4 expected)");
    double numel = 1;
    for (uint32_t d = 0; d < dims.Length(); d++) {
      uint64_t n = ReadCount(env, dims.Get(d), name + ".shape[" + std::to_string(d) + "]");
      if (n == 0) throw SpecError("SHAPE_MISMATCH", "tensor " + name + " has an empty dimension");
      t.shape.push_back(static_cast<int64_t>(n));
      numel *= static_cast<double>(n);
    }
    if (numel > kMaxSafeInteger / 4)
      throw SpecError("SHAPE_MISMATCH", "tensor " + name + " is too large (" + std::to_string(numel) + " elements)");
    t.numel = static_cast<int64_t>(numel);

    uint64_t file = ReadCount(env, desc.Get("file"), name + ".file");
    if (file >= out->mappings_.size())
      ThrowTypeError(env, name + ".file is " + std::to_string(file) + " but spec.files has " +
                              std::to_string(out->mappings_.size()) + " entries");
    const Mapping& mapping = *out->mappings_[file];
    uint64_t offset = ReadCount(env, desc.Get("byteOffset"), name + ".byteOffset");
    uint64_t length = ReadCount(env, desc.Get("byteLength"), name + ".byteLength");

    const int block_values = t.dtype == DType::GgmlQ8_0 ? 32 : t.dtype == DType::GgmlBlocks ? kernels::InfoOf(t.block).values : 1;
    if (t.shape.back() % block_values != 0)
      throw SpecError("SHAPE_MISMATCH", "tensor " + t.Describe() + " has rows that are not whole blocks of " +
                                            std::to_string(block_values) + " values");
    uint64_t expected = DataBytes(t.dtype, t.block, static_cast<uint64_t>(t.numel));
    if (length != expected)
      throw SpecError("SHAPE_MISMATCH", "tensor " + t.Describe() + " needs " + std::to_string(expected) +
                                            " bytes but its view has " + std::to_string(length));
    if (!mapping.Contains(offset, length))
      throw SpecError("OUT_OF_BOUNDS", "tensor " + name + " at bytes [" + std::to_string(offset) + ", +" +
                                           std::to_string(length) + ") lies outside " + mapping.path() + " (" +
                                           std::to_string(mapping.size()) + " bytes)");
    t.data = mapping.At(offset, length);
    t.byte_length = length;

    Napi::Value scales = desc.Get("scales");
    if (t.dtype == DType::Q8_0) {
      if (!scales.IsObject()) throw SpecError("MISSING_TENSOR", "q8_0 tensor " + name + " has no scales");
      Napi::Object s = scales.As<Napi::Object>();
      uint64_t group = ReadCount(env, s.Get("groupSize"), name + ".scales.groupSize");
      if (group == 0 || group > (1u << 20) || static_cast<uint64_t>(t.numel) % group != 0)
        throw SpecError("CONFIG_MISMATCH", "q8_0 tensor " + t.Describe() + " has group size " + std::to_string(group) +
                                               ", which does not divide its element count");
      uint64_t s_offset = ReadCount(env, s.Get("byteOffset"), name + ".scales.byteOffset");
      uint64_t s_length = ReadCount(env, s.Get("byteLength"), name + ".scales.byteLength");
      uint64_t s_expected = static_cast<uint64_t>(t.numel) / group * 4;
      if (s_length != s_expected)
        throw SpecError("SHAPE_MISMATCH", "scales of " + t.Describe() + " need " + std::to_string(s_expected) +
                                              " bytes but the view has " + std::to_string(s_length));
      if (!mapping.Contains(s_offset, s_length))
        throw SpecError("OUT_OF_BOUNDS", "scales of " + name + " at bytes [" + std::to_string(s_offset) + ", +" +
                                             std::to_string(s_length) + ") lie outside " + mapping.path());
      t.scales = mapping.At(s_offset, s_length);
      t.group = static_cast<int>(group);
    } else if (t.dtype == DType::GgmlQ8_0) {
      t.group = 32;
    }
    out->file_of_[name] = file;
    out->tensors_.emplace(name, std::move(t));
  }
  return out;
}

const TensorRef* WeightsSpec::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorRef& WeightsSpec::Require(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorRef* t = Find(name);
  if (!t) throw SpecError("MISSING_TENSOR", "the weights have no tensor " + name);
  if (t->shape != shape)
    throw SpecError("SHAPE_MISMATCH", "tensor " + name + " has shape " + ShapeString(t->shape) + ", the config needs " +
                                          ShapeString(shape));
  return *t;
}

const std::string& WeightsSpec::PathOf(const TensorRef& t) const {
  return mappings_[file_of_.at(t.name)]->path();
}

}  // namespace weightmap
