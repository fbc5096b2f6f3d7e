#include "engines/weights_spec.h"

#include <cmath>
#include <sstream>

#include "kernels/ggml_blocks.h"

namespace weightmap {

namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;  // 2^53 - 1

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

std::shared_ptr<WeightsSpec> WeightsSpec::Make(std::vector<std::shared_ptr<Mapping>> files, const std::vector<TensorView>& views,
                                               std::map<std::string, std::string> names) {
  auto out = std::make_shared<WeightsSpec>();
  out->mappings_ = std::move(files);
  out->names_ = std::move(names);
  for (const TensorView& view : views) {
    const std::string& name = view.name;
    TensorRef t;
    t.name = name;
    t.dtype = ParseDType(view.dtype, name, &t.block);

    if (view.shape.empty() || view.shape.size() > 4)
      throw SpecError("SHAPE_MISMATCH", "tensor " + name + " has rank " + std::to_string(view.shape.size()) + " (1 to 4 expected)");
    double numel = 1;
    for (uint64_t n : view.shape) {
      if (n == 0) throw SpecError("SHAPE_MISMATCH", "tensor " + name + " has an empty dimension");
      if (n > kMaxSafeInteger) throw SpecError("SHAPE_MISMATCH", "tensor " + name + " has a dimension past 2^53");
      t.shape.push_back(static_cast<int64_t>(n));
      numel *= static_cast<double>(n);
    }
    if (numel > kMaxSafeInteger / 4)
      throw SpecError("SHAPE_MISMATCH", "tensor " + name + " is too large (" + std::to_string(numel) + " elements)");
    t.numel = static_cast<int64_t>(numel);

    if (view.file >= out->mappings_.size())
      throw SpecError("OUT_OF_BOUNDS", "tensor " + name + " names file " + std::to_string(view.file) + " of " +
                                           std::to_string(out->mappings_.size()));
    const Mapping& mapping = *out->mappings_[view.file];
    const uint64_t offset = view.byte_offset, length = view.byte_length;

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

    t.transposed = view.transposed;
    if (t.transposed && (t.shape.size() != 2 || t.dtype == DType::Q8_0 || t.dtype == DType::GgmlQ8_0))
      throw SpecError("UNSUPPORTED", "tensor " + t.Describe() + " is stored transposed; only f32/f16/bf16 matrices can be");

    if (t.dtype == DType::Q8_0) {
      if (!view.has_scales) throw SpecError("MISSING_TENSOR", "q8_0 tensor " + name + " has no scales");
      const uint64_t group = view.group;
      if (group == 0 || group > (1u << 20) || static_cast<uint64_t>(t.numel) % group != 0)
        throw SpecError("CONFIG_MISMATCH", "q8_0 tensor " + t.Describe() + " has group size " + std::to_string(group) +
                                               ", which does not divide its element count");
      const uint64_t s_offset = view.scales_offset, s_length = view.scales_length;
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
    out->file_of_[name] = view.file;
    out->tensors_.emplace(name, std::move(t));
  }
  return out;
}

std::string WeightsSpec::Name(const std::string& role) const {
  auto it = names_.find(role);
  if (it == names_.end()) throw SpecError("CONFIG_MISMATCH", "the weights spec names no tensor for the role " + role);
  return it->second;
}

std::string WeightsSpec::Name(const std::string& role, int64_t layer) const {
  static const std::string kLayer = "{layer}";
  std::string name = Name(role);
  const size_t at = name.find(kLayer);
  if (at == std::string::npos)
    throw SpecError("CONFIG_MISMATCH", "the weights spec's name for the per-layer role " + role + " has no " + kLayer);
  return name.replace(at, kLayer.size(), std::to_string(layer));
}

std::string WeightsSpec::Name(const std::string& role, int64_t layer, int64_t expert) const {
  static const std::string kExpert = "{expert}";
  std::string name = Name(role, layer);
  const size_t at = name.find(kExpert);
  if (at == std::string::npos)
    throw SpecError("CONFIG_MISMATCH", "the weights spec's name for the per-expert role " + role + " has no " + kExpert);
  return name.replace(at, kExpert.size(), std::to_string(expert));
}

const TensorRef* WeightsSpec::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorRef& WeightsSpec::Require(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorRef& t = RequireAnyOrder(name, shape);
  if (t.transposed)
    throw SpecError("UNSUPPORTED", "tensor " + t.Describe() + " is stored transposed (column-major), which this engine does not read");
  return t;
}

const TensorRef& WeightsSpec::RequireAnyOrder(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorRef* t = Find(name);
  if (!t) throw SpecError("MISSING_TENSOR", "the weights have no tensor " + name);
  if (t->shape != shape)
    throw SpecError("SHAPE_MISMATCH", "tensor " + name + " has shape " + ShapeString(t->shape) + ", the config needs " +
                                          ShapeString(shape));
  return *t;
}

namespace {

const TensorRef& RequireTyped(const WeightsSpec& spec, const std::string& name, const std::vector<int64_t>& shape, DType dtype) {
  const TensorRef& t = spec.Require(name, shape);
  if (t.dtype != dtype)
    throw SpecError("BAD_DTYPE", "tensor " + t.Describe() + " must be " + DTypeName(dtype) + " for this engine");
  return t;
}

}  // namespace

const float* WeightsSpec::RequireF32(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorRef& t = RequireTyped(*this, name, shape, DType::F32);
  if (reinterpret_cast<uintptr_t>(t.data) % alignof(float) != 0)
    throw SpecError("UNSUPPORTED", "f32 tensor " + t.Describe() + " is not 4-byte aligned in " + PathOf(t));
  return reinterpret_cast<const float*>(t.data);
}

const uint16_t* WeightsSpec::RequireF16(const std::string& name, const std::vector<int64_t>& shape) const {
  return reinterpret_cast<const uint16_t*>(RequireTyped(*this, name, shape, DType::F16).data);
}

const std::string& WeightsSpec::PathOf(const TensorRef& t) const {
  return mappings_[file_of_.at(t.name)]->path();
}

}  // namespace weightmap
