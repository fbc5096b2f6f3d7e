#include "kernels/i8_matrix.h"

#include <stdexcept>
#include <string>

namespace weightmap {
namespace kernels {

I8Matrix::I8Matrix(int64_t n, int64_t k) : n_(n), k_(k), k4_((k + 3) / 4 * 4) {
  if (n < 1 || k < 1 || k > 65536)
    throw std::invalid_argument("I8Matrix: need n >= 1 and 1 <= k <= 65536, got n = " + std::to_string(n) +
                                ", k = " + std::to_string(k));
  const int64_t channels = (n + kI8Panel - 1) / kI8Panel * kI8Panel;
  data_.assign(size_t(channels * k4_), 0);
  scale_.assign(size_t(channels), 0.0f);
  corr_.assign(size_t(channels), 0);
}

void I8Matrix::SetRow(int64_t j, const float* w) {
  std::vector<int8_t> q(static_cast<size_t>(k_));
  float scale = 0;
  Active().quantize_q8(w, k_, int(k_), q.data(), &scale);
  SetRow(j, q.data(), scale);
}

void I8Matrix::SetRow(int64_t j, const int8_t* q, float scale) {
  if (j < 0 || j >= n_) throw std::out_of_range("I8Matrix::SetRow: channel " + std::to_string(j));
  // Channel j of its panel: depth d at [d / 4][j % kI8Panel][d % 4].
  int8_t* panel = data_.data() + (j / kI8Panel) * k4_ * kI8Panel;
  const int64_t c = j % kI8Panel;
  int32_t sum = 0;
  for (int64_t d = 0; d < k_; ++d) {
    panel[(d / 4) * kI8Panel * 4 + c * 4 + d % 4] = q[d];
    sum += q[d];
  }
  scale_[size_t(j)] = scale;
  corr_[size_t(j)] = -128 * sum;
}

I8Weights I8Matrix::view() const {
  I8Weights w;
  w.n = n_;
  w.k = k_;
  w.k4 = k4_;
  w.data = data_.data();
  w.scale = scale_.data();
  w.corr = corr_.data();
  return w;
}

}  // namespace kernels
}  // namespace weightmap
