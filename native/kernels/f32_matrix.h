// f32 weights for sgemm_packed (kernels.h): W [n, k] (HF [out,in], y = x·Wᵀ) rearranged once at
// load into panels of kF32Panel output channels, each [k][kF32Panel], so that the product reads
// every weight in address order and packs nothing per call (what a small batch, which streams
// all the weights for a few rows, cannot afford).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace weightmap {
namespace kernels {

class F32Matrix {
 public:
  // An all-zero matrix W [n, k], n, k >= 1.
  F32Matrix(int64_t n, int64_t k);

  // Channel j (row j of W) from its k weights.
  void SetRow(int64_t j, const float* w);

  F32Panels view() const;
  size_t bytes() const { return data_.size() * sizeof(float); }

 private:
  int64_t n_, k_;
  std::vector<float> data_;  // [panels][k][kF32Panel]
};

}  // namespace kernels
}  // namespace weightmap
