// The weights an engine loads from: tensor views (lib/engines/native-spec.ts describes them from
// ModelWeights; native/napi/weights_spec_napi.cc reads that description) turned into pointers into
// the mapped files, after checking every offset and size against the mapping it points into. The
// spec keeps every mapping alive, so an engine that holds the spec can use the pointers for as long
// as it lives. Plain C++: every failure is a SpecError.
//
// `transposed`: the bytes hold the matrix [shape[1], shape[0]] row-major, i.e. `shape` in column-major
// order (a Fortran-order .npy). Require() refuses such a tensor; only RequireAnyOrder() returns it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engines/engine_error.h"
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

struct TensorRef {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // outermost first
  int64_t numel = 0;
  const uint8_t* data = nullptr;  // byte_length bytes, inside a mapping the spec keeps alive
  uint64_t byte_length = 0;
  const uint8_t* scales = nullptr;  // Q8_0: numel / group f32 values (possibly unaligned)
  int group = 0;                    // Q8_0: elements per scale; GgmlQ8_0: 32
  bool transposed = false;          // rank 2 only: data is [shape[1], shape[0]] row-major
  kernels::BlockType block = kernels::BlockType::Q4_0;  // GgmlBlocks: the block type

  // "name [a, b] f32" for messages.
  std::string Describe() const;
};

// One tensor as the caller describes it, unchecked: bytes [byte_offset, +byte_length) of
// files[file]; Q8_0 keeps its scales elsewhere in the same file.
struct TensorView {
  std::string name;
  std::string dtype;  // "f32", "f16", "bf16", "q8_0", "ggml_q8_0", "ggml_" + a block type's name
  std::vector<uint64_t> shape;
  size_t file = 0;
  uint64_t byte_offset = 0, byte_length = 0;
  bool has_scales = false;
  uint64_t scales_offset = 0, scales_length = 0, group = 0;
  bool transposed = false;
};

class WeightsSpec {
 public:
  // Checks every view against its mapping and dtype; throws SpecError. `names`: the tensor name of
  // each role the engine asks for (the caller's family table, lib/architectures), "{layer}" standing
  // for the layer index in per-layer ones ("{expert}" for the expert index in per-expert ones).
  static std::shared_ptr<WeightsSpec> Make(std::vector<std::shared_ptr<Mapping>> files, const std::vector<TensorView>& views,
                                           std::map<std::string, std::string> names = {});

  // The tensor name of `role` (of layer `layer` for a per-layer role, of expert `expert` of it for
  // a per-expert one); SpecError CONFIG_MISMATCH when the spec names no tensor for it.
  std::string Name(const std::string& role) const;
  std::string Name(const std::string& role, int64_t layer) const;
  std::string Name(const std::string& role, int64_t layer, int64_t expert) const;

  const TensorRef* Find(const std::string& name) const;
  // The tensor `name` with exactly `shape`, or SpecError MISSING_TENSOR / SHAPE_MISMATCH
  // (UNSUPPORTED when it is stored transposed).
  const TensorRef& Require(const std::string& name, const std::vector<int64_t>& shape) const;
  // The same, stored in either order (the caller handles `transposed`).
  const TensorRef& RequireAnyOrder(const std::string& name, const std::vector<int64_t>& shape) const;
  // Require() of an f32 tensor (4-byte aligned) or an f16 one (any offset: the kernels load it
  // unaligned), as typed pointers into the mapping; SpecError BAD_DTYPE for another dtype.
  const float* RequireF32(const std::string& name, const std::vector<int64_t>& shape) const;
  const uint16_t* RequireF16(const std::string& name, const std::vector<int64_t>& shape) const;

  const std::map<std::string, TensorRef>& tensors() const { return tensors_; }
  const std::vector<std::shared_ptr<Mapping>>& mappings() const { return mappings_; }
  // The path of the file that holds a tensor, for messages.
  const std::string& PathOf(const TensorRef& t) const;

 private:
  std::vector<std::shared_ptr<Mapping>> mappings_;
  std::map<std::string, TensorRef> tensors_;
  std::map<std::string, size_t> file_of_;
  std::map<std::string, std::string> names_;
};

std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace weightmap
