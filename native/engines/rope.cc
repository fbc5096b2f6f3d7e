#include "engines/rope.h"

#include <cmath>

namespace weightmap {
namespace engines {

void Rope::Angles(int64_t pos, float* cs) const {
  const int64_t half = rot_dim / 2;
  for (int64_t i = 0; i < half; i++) {
    const double factor = factors ? factors[i] : 1.0;
    const double angle = static_cast<double>(pos) * std::pow(theta, -2.0 * i / rot_dim) / factor;
    cs[i] = static_cast<float>(std::cos(angle));
    cs[half + i] = static_cast<float>(std::sin(angle));
  }
}

void Rope::Rotate(float* x, const float* cs) const {
  const int64_t half = rot_dim / 2;
  const float* sn = cs + half;
  for (int64_t i = 0; i < half; i++) {
    float* a = interleaved ? x + 2 * i : x + i;
    float* b = interleaved ? x + 2 * i + 1 : x + i + half;
    const float a0 = *a, b0 = *b;
    *a = a0 * cs[i] - b0 * sn[i];
    *b = a0 * sn[i] + b0 * cs[i];
  }
}

}  // namespace engines
}  // namespace weightmap
