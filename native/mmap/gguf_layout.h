// Where a GGUF file's tensors lie, read straight from its header in under a millisecond
// (the KV section, with Qwen3's 151k-token vocabulary, is stepped over, not decoded), so that
// loadModel can start mapping the weights (early_prefault.h) while the JS reader still parses the
// same header. Malformed input yields false, never a read outside [data, data + size): the JS
// reader is the one that reports what is wrong with a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weightmap {

struct GgufTensorSpan {
  std::string name;
  uint32_t type;   // ggml type id
  uint64_t begin;  // byte offsets in the file; end is where the next tensor (or the file) starts
  uint64_t end;
};

constexpr uint32_t kGgmlTypeBf16 = 30;

// The tensors of the GGUF (version 2 or 3) in `data`, in file order.
bool ReadGgufTensorSpans(const uint8_t* data, uint64_t size, std::vector<GgufTensorSpan>* out);

}  // namespace weightmap
