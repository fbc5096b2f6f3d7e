// Q8_0 quantization of stored weights for the format writers (FORMATS.md §5.2: qwen3.c export.py
// with torch float32 arithmetic). Per group of `group` consecutive elements of the flattened
// tensor: s = max|w| / 127, q = round-half-to-even(w / s) clamped to [-127, 127]; a group whose
// scale is 0 (all zeros) gets q = 0. NaN elements do not count toward the max and become 0.
// This differs from kernels::quantize_q8 (activations, runq: round half away from zero).
#pragma once

#include <cstdint>

namespace weightmap {
namespace convert {

enum class WeightType { F32, F16, BF16 };

// Bytes per element of `type`.
int WeightTypeBytes(WeightType type);

// `n` elements of `src` (little-endian `type`, any alignment; n % group == 0) -> q[n] and
// scales[n / group].
void QuantizeQ8Weights(const uint8_t* src, WeightType type, int64_t n, int group, int8_t* q, float* scales);

}  // namespace convert
}  // namespace weightmap
