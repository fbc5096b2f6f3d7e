// Rotary position embedding, the one implementation every engine calls (decoder, its batched step,
// phi). The angles of a position are computed once (Angles) and applied to every head (Rotate).
#pragma once

#include <cstdint>

namespace weightmap {
namespace engines {

struct Rope {
  int64_t rot_dim = 0;  // dims rotated per head, even: pairs (i, i + rot_dim/2), or (2i, 2i+1) when interleaved
  double theta = 10000.0;
  bool interleaved = false;
  // Null, or rot_dim/2 factors that divide the inverse frequencies (Llama 3's rope_freqs).
  const float* factors = nullptr;

  // cs[rot_dim]: the cosines of the rot_dim/2 pair angles at `pos`, then their sines, with
  // angle_i = pos · θ^(-2i/rot_dim) / factor_i computed in double and rounded once.
  void Angles(int64_t pos, float* cs) const;
  // Rotates the first rot_dim dims of one head x by the angles cs of Angles().
  void Rotate(float* x, const float* cs) const;
};

}  // namespace engines
}  // namespace weightmap
