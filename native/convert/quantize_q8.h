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

// ggml's Q8_0 (block_q8_0, GGUF type 8): blocks of 32 consecutive elements, each stored as 34
// bytes: d as little-endian f16, then 32 int8 q. As llama.cpp's quantize_row_q8_0_ref: amax =
// max|x|, d = amax / 127 and q = round-half-away-from-zero(x · (1 / d)) in float32 with the float32
// d (q = 0 when d is 0); d is stored rounded to f16 (nearest even). NaN elements do not count
// toward amax and become 0 (ggml leaves NaN undefined).
constexpr int kGgmlQ8Block = 32;
constexpr int kGgmlQ8BlockBytes = 34;

// `n` elements of `src` (little-endian `type`, any alignment; n % 32 == 0) -> out[n / 32 * 34].
void QuantizeGgmlQ8_0(const uint8_t* src, WeightType type, int64_t n, uint8_t* out);

// The same from `n` elements of a q8_0 tensor (ajc1 / llama2.c: int8 values, one little-endian
// float32 scale per `group`) starting at element `first`: q points at element `first`'s int8,
// scales at the tensor's first scale (any alignment). Each value is dequantized as q · scale in
// float32 first (n % 32 == 0).
void QuantizeGgmlQ8_0FromQ8(const uint8_t* q, const uint8_t* scales, int64_t group, int64_t first, int64_t n, uint8_t* out);

}  // namespace convert
}  // namespace weightmap
