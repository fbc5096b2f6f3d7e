// Turns a JS description of tensor views (lib/engines/*.ts builds it from ModelWeights) into
// native pointers into the mapped files, after checking every offset and size against the
// mapping it points into. The spec keeps every mapping alive, so an engine that holds the spec
// can use the pointers for as long as it lives, whatever JS does with its MappedFile handles.
//
// JS shape:
//   { files: MappedFile[],
//     tensors: { [canonicalName]: { dtype, shape: number[], file: number, byteOffset, byteLength,
//                                   scales?: { byteOffset, byteLength, groupSize } } } }
#pragma once

#include <napi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "mmap/mapping.h"

namespace weightmap {

// The element types an engine can consume. Q8_0: int8 values plus one f32 scale per `group`
// consecutive elements of the flattened tensor, the scales stored elsewhere (ajc1, llama2.c v2).
// GgmlQ8_0: ggml's blocks of 32 elements, each an f16 scale followed by 32 int8 (34 bytes).
// GgmlBlocks: any other ggml block type (TensorRef::block; layouts in kernels/ggml_blocks.h),
// rows of whole blocks; JS names them "ggml_" + the type's name ("ggml_q4_k").
enum class DType { F32, F16, BF16, Q8_0, GgmlQ8_0, GgmlBlocks };

const char* DTypeName(DType dtype);

// A failure with one of WeightFormatError's stable codes (lib/errors.ts), e.g. "OUT_OF_BOUNDS",
// "SHAPE_MISMATCH", "BAD_DTYPE", "MISSING_TENSOR", "CONFIG_MISMATCH".
class SpecError : public std::runtime_error {
 public:
  SpecError(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

struct TensorRef {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // outermost first
  int64_t numel = 0;
  const uint8_t* data = nullptr;  // byte_length bytes, inside a mapping the spec keeps alive
  uint64_t byte_length = 0;
  const uint8_t* scales = nullptr;  // Q8_0: numel / group f32 values (possibly unaligned)
  int group = 0;                    // Q8_0: elements per scale; GgmlQ8_0: 32
  kernels::BlockType block = kernels::BlockType::Q4_0;  // GgmlBlocks: the block type

  // "name [a, b] f32" for messages.
  std::string Describe() const;
};

class WeightsSpec {
 public:
  // Validates the whole description; throws SpecError (bad layout) or Napi::TypeError (misuse).
  static std::shared_ptr<WeightsSpec> FromValue(Napi::Value spec);

  const TensorRef* Find(const std::string& name) const;
  // The tensor `name` with exactly `shape`, or SpecError MISSING_TENSOR / SHAPE_MISMATCH.
  const TensorRef& Require(const std::string& name, const std::vector<int64_t>& shape) const;

  const std::map<std::string, TensorRef>& tensors() const { return tensors_; }
  // The path of the file that holds a tensor, for messages.
  const std::string& PathOf(const TensorRef& t) const;

 private:
  std::vector<std::shared_ptr<Mapping>> mappings_;
  std::map<std::string, TensorRef> tensors_;
  std::map<std::string, size_t> file_of_;
};

std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace weightmap
