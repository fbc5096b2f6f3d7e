// The steps of the forward pass that differ between decoder variants, shared by Forward
// (decoder_forward.cc) and BatchStep (decoder_batch.cc).
#include <cmath>

#include "engines/decoder.h"
#include "kernels/kernels.h"

namespace weightmap {
namespace decoder {

void GatedActivation(const DecoderConfig& c, float* gate, const float* up, int64_t n) {
  if (!c.gelu) {
    kernels::silu_mul(gate, up, gate, n);
    return;
  }
  kernels::gelu_tanh(gate, n);
  for (int64_t i = 0; i < n; i++) gate[i] *= up[i];
}

void AddBlockOutput(const DecoderConfig& c, const std::vector<float>& post_norm, const float* proj, float* scratch,
                    float* x, int64_t rows) {
  const int64_t dim = c.dim;
  if (c.sandwich_norms) {
    for (int64_t t = 0; t < rows; t++) kernels::rmsnorm(proj + t * dim, post_norm.data(), scratch + t * dim, dim, c.eps);
    proj = scratch;
  }
  kernels::Active().axpy_f32(1.0f, proj, x, rows * dim);
}

}  // namespace decoder
}  // namespace weightmap
