#include "engines/rope.h"

#include <algorithm>
#include <cmath>

namespace weightmap {
namespace engines {

namespace {

// ggml_rope_yarn_corr_dim: the pair dimension whose wavelength makes n_rot turns in n_ctx_orig.
float CorrDim(int64_t n_dims, int64_t n_ctx_orig, double n_rot, double base) {
  return static_cast<float>(n_dims) * logf(static_cast<float>(n_ctx_orig) / (static_cast<float>(n_rot) * 2 * static_cast<float>(M_PI))) /
         (2 * logf(static_cast<float>(base)));
}

}  // namespace

void Rope::Angles(int64_t pos, float* cs) const {
  const int64_t half = rot_dim / 2;
  if (yarn_factor > 0) {
    // ggml_rope_yarn_corr_dims, then rope_yarn's ramp and magnitude scale (f32 as ggml computes them).
    const float fast = CorrDim(rot_dim, yarn_orig_ctx, beta_fast, theta), slow = CorrDim(rot_dim, yarn_orig_ctx, beta_slow, theta);
    const float low = std::max(0.0f, yarn_unrounded ? fast : floorf(fast));
    const float high = std::min(static_cast<float>(rot_dim - 1), yarn_unrounded ? slow : ceilf(slow));
    const float mscale = static_cast<float>(attn_factor) * (1.0f + 0.1f * logf(static_cast<float>(yarn_factor)));
    for (int64_t i = 0; i < half; i++) {
      const double extrap = static_cast<double>(pos) * std::pow(theta, -2.0 * i / rot_dim);
      const double interp = extrap / yarn_factor;
      const float y = (static_cast<float>(i) - low) / std::max(0.001f, high - low);
      const double ramp = 1.0f - std::min(1.0f, std::max(0.0f, y));
      const double angle = interp * (1 - ramp) + extrap * ramp;
      cs[i] = static_cast<float>(std::cos(angle)) * mscale;
      cs[half + i] = static_cast<float>(std::sin(angle)) * mscale;
    }
    return;
  }
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
