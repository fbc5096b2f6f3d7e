// Per-channel int8 weights for gemm_i8 (kernels.h): each output channel j (a row of W [n, k]) is
// quantized on its own, s_j = max|w_j| / 127 and q = round half away from zero of w / s_j (what
// quantize_q8 does with group = k), then packed into the panel layout of I8Weights. Built once at
// load; the packed bytes are about a quarter of the f32 matrix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace weightmap {
namespace kernels {

class I8Matrix {
 public:
  // An all-zero matrix W [n, k]; 1 <= k <= 65536 (the int32 sums of gemm_i8 stay exact).
  I8Matrix(int64_t n, int64_t k);

  // Channel j from f32 weights [k], quantized as above.
  void SetRow(int64_t j, const float* w);
  // Channel j from int8 values [k] with their scale.
  void SetRow(int64_t j, const int8_t* q, float scale);

  I8Weights view() const;
  size_t bytes() const { return data_.size() + scale_.size() * sizeof(float) + corr_.size() * sizeof(int32_t); }

 private:
  int64_t n_, k_, k4_;
  std::vector<int8_t> data_;    // [panels][k4 / 4][kI8Panel][4]
  std::vector<float> scale_;    // [panels · kI8Panel]
  std::vector<int32_t> corr_;   // [panels · kI8Panel]
};

}  // namespace kernels
}  // namespace weightmap
