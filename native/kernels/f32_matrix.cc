#include "kernels/f32_matrix.h"

#include <stdexcept>
#include <string>

namespace weightmap {
namespace kernels {

F32Matrix::F32Matrix(int64_t n, int64_t k) : n_(n), k_(k) {
  if (n < 1 || k < 1)
    throw std::invalid_argument("F32Matrix: need n, k >= 1, got n = " + std::to_string(n) + ", k = " + std::to_string(k));
  data_.assign(size_t((n + kF32Panel - 1) / kF32Panel * kF32Panel * k), 0.0f);
}

void F32Matrix::SetRow(int64_t j, const float* w) {
  if (j < 0 || j >= n_) throw std::out_of_range("F32Matrix::SetRow: channel " + std::to_string(j));
  float* panel = data_.data() + (j / kF32Panel) * k_ * kF32Panel;
  for (int64_t p = 0; p < k_; ++p) panel[p * kF32Panel + j % kF32Panel] = w[p];
}

F32Panels F32Matrix::view() const {
  F32Panels v;
  v.n = n_;
  v.k = k_;
  v.data = data_.data();
  return v;
}

}  // namespace kernels
}  // namespace weightmap
