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
  // YaRN (gpt-oss), as ggml's rope_yarn computes it with ext_factor 1: yarn_factor > 0 scales the
  // frequencies by 1/yarn_factor, blended back to the unscaled ones over the pairs between the
  // correction dims of beta_fast and beta_slow at yarn_orig_ctx; the cosines and sines are
  // multiplied by attn_factor · (1 + 0.1 ln yarn_factor). yarn_factor 0: plain RoPE.
  double yarn_factor = 0;
  int64_t yarn_orig_ctx = 0;
  double beta_fast = 32, beta_slow = 1, attn_factor = 1;
  // The correction dims as computed, not floored/ceiled (transformers' rope_scaling truncate: false,
  // gpt-oss's released config; ggml always rounds them).
  bool yarn_unrounded = false;

  // cs[rot_dim]: the cosines of the rot_dim/2 pair angles at `pos`, then their sines, with
  // angle_i = pos · θ^(-2i/rot_dim) / factor_i computed in double and rounded once.
  void Angles(int64_t pos, float* cs) const;
  // Rotates the first rot_dim dims of one head x by the angles cs of Angles().
  void Rotate(float* x, const float* cs) const;
};

}  // namespace engines
}  // namespace weightmap
