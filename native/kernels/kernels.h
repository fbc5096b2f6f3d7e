// The kernel interface every engine calls. Each kernel has a scalar reference (kernels_scalar.cc)
// and optional variants per instruction set (kernels_avx2.cc, kernels_avx512.cc, kernels_neon.cc,
// ...), each compiled with its own flags; dispatch.cc picks one table at run time from the CPU's
// features (WEIGHTMAP_ISA=scalar|avx2|avx512|avx512vnni|neon forces a lower one).
//
// Conventions: row-major; "[out,in]" weights are applied as y = W·x; f16 is IEEE binary16 stored
// as uint16_t; Q8_0 data is int8 values plus one f32 scale per `group` consecutive elements of
// the flattened tensor (group >= 1; rows are whole groups: cols % group == 0). Q8_0 weights may be
// any int8, activations xq lie in [-127, 127] (as quantize_q8 makes them; the AVX2 and AVX-512
// int8 products rely on it). Every group size works; the SIMD tables are fastest for
// group % 32 == 0 (matvec) and group % 4 == 0 (matmul) and take the scalar code otherwise.
//
// The table holds single-threaded kernels over a row range; the threaded entry points in
// kernels/parallel.h split rows across a ThreadPool and call the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weightmap {

class ThreadPool;

namespace kernels {

// Int8 weights W [n, k] with one scale per output channel (row), packed for gemm_i8 in a layout
// every table reads as it lies: panels of kI8Panel channels, each [k4 / 4][kI8Panel][4] int8
// (4 consecutive depths of one channel side by side), k4 = k rounded up to a multiple of 4.
// Padding (channels past n, depths past k) is zero. Owned and filled by I8Matrix.
constexpr int kI8Panel = 16;
struct I8Weights {
  int64_t n = 0, k = 0, k4 = 0;
  const int8_t* data = nullptr;     // [panels][k4 / 4][kI8Panel][4]
  const float* scale = nullptr;     // [panels · kI8Panel] per channel, 0 past n
  const int32_t* corr = nullptr;    // [panels · kI8Panel] -128 · Σ_k w[j, k] (for u8 × s8 dot products)
  int64_t panels() const { return (n + kI8Panel - 1) / kI8Panel; }
};

// f32 weights W [n, k] packed for sgemm_packed: panels of kF32Panel output channels, each
// [k][kF32Panel] (depth p of the panel's channels side by side), zero past n. Filled by F32Matrix.
constexpr int kF32Panel = 16;
struct F32Panels {
  int64_t n = 0, k = 0;
  const float* data = nullptr;  // [panels][k][kF32Panel]
  int64_t panels() const { return (n + kF32Panel - 1) / kF32Panel; }
};

// ggml's quantized block types (GGUF), dense ids for the tables; layouts, names and the exact
// dequantization are in kernels/ggml_blocks.h.
enum class BlockType : int { Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4, kCount };
constexpr int kBlockTypes = static_cast<int>(BlockType::kCount);

// Activations X [m, n] quantized for the ggml dot products (n % 32 == 0): per row, blocks of 32
// values with q = quantize_q8(x, group 32) (the same q and scale, bit for bit), plus the sum of
// q over every 16 consecutive values (for the weights' per-sub-block minimums).
constexpr int kActBlock = 32;
struct Q8Act {
  int64_t m = 0, n = 0;
  const int8_t* q = nullptr;     // [m, n], values in [-127, 127]
  const float* d = nullptr;      // [m, n / 32]
  const int16_t* sum = nullptr;  // [m, n / 16]: Σ q over values [16·s, 16·s + 16) of the row
};

// The ggml kernels of a table. A SIMD table may leave any pointer null: dispatch.cc then uses the
// scalar one (so a variant fills only the types it speeds up). Filled: every slot in
// ggml_dot.cc (the scalar reference), "avx2" and "avx512" (ggml_dot_avx2.cc), "avx512vnni"
// (ggml_dot_avx512.cc: m = 1 two rows per zmm, ggml_two.h; m >= 16 activation rows a GEMM over
// panels unpacked once per call, ggml_gemm_tiles.h) and "neon" (ggml_dot_neon.cc), all over ggml_tiles.h.
struct GgmlKernels {
  // x[n] -> q[n], d[n / 32], sum[n / 16] for one row (n % 32 == 0), as Q8Act describes. q and d
  // are bit-identical to quantize_q8(x, n, 32, q, d) (exact in every table); sum is exact.
  void (*quantize_act)(const float* x, int64_t n, int8_t* q, float* d, int16_t* sum);

  // matmul[type]: rows [r0, r1) of Y [x.m, rows] (row stride ldy) = X · Wᵀ for W [rows, x.n] of
  // ggml blocks of `type`, used in place: row r is the RowBytes(type, n) bytes at
  // w + r · RowBytes(type, n) (any alignment; n % block values == 0). m = 1 is decode's matvec.
  //
  // The value, with W's blocks unpacked as UnpackBlock (ggml_blocks.h) describes them (integer
  // levels q_i and, per sub-block s of 16 or 32 values, f32 factors S_s and M_s):
  //   y[i, r] = Σ_s x.d(s) · (S_s · I_s + M_s · X_s)
  //   I_s = Σ_{k in s} q_k · x.q[i, k]   (int32, exact), X_s = Σ_{k in s} x.q[i, k] (from x.sum)
  // where x.d(s) is the activation scale of the 32-block holding s (M_s = 0 for types without
  // minimums). The scalar reference evaluates exactly that, sub-block by sub-block, left to
  // right. A variant may regroup the f32 arithmetic (factor a super-block's d out of S_s, sum the
  // sub-blocks in any order, fuse into fma, take levels shifted to unsigned, u = q + c with
  // c <= 128, and the shift back as -c·S_s·X_s in f32), but must keep every integer sum exact and
  // stay within
  //   |y - y_scalar| <= (n / 16 + 16) · 2^-23 · Σ_k |x.d(k)| · (|S_k| · (|q_k| + 128) + |M_k|) · |x.q[i, k]|,
  // and a row's result must not depend on m, r0/r1 or the thread split (test/kernels/ggml-dot).
  void (*matmul[kBlockTypes])(const uint8_t* w, const Q8Act& x, float* y, int64_t ldy, int64_t r0, int64_t r1);
};

struct KernelTable {
  const char* isa;  // "scalar", "avx2", "avx512", "avx512vnni", "neon"

  // Q8_0 quantization of activations: q = round_half_away(x / s), s = max|x| / 127 per group
  // (s = 0 and q = 0 for an all-zero group), clamped to [-127, 127] (needed only for non-finite x),
  // NaN -> 0. x[n] -> q[n], s[n / group]; n % group == 0.
  void (*quantize_q8)(const float* x, int64_t n, int group, int8_t* q, float* s);

  // Rows [r0, r1) of y = W·x for Q8_0 W [rows, cols] and quantized x [cols]:
  // y[r] = Σ_g w_s[r, g] · x_s[g] · Σ_{i in g} w_q[r, i] · x_q[i]   (int32 inside a group).
  // The int32 of every group is exact; the f32 sum over groups may be taken in any order.
  void (*matvec_q8)(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs,
                    float* y, int64_t cols, int group, int64_t r0, int64_t r1);

  // Rows [r0, r1) of Y = X·Wᵀ for m quantized activation rows X [m, cols] and Q8_0 W [rows, cols]:
  // Y [m, rows]. ldy = leading dimension of Y (>= rows). Each weight row is reused across the m
  // activation rows (prefill); the same per-group arithmetic as matvec_q8.
  void (*matmul_q8)(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs,
                    float* y, int64_t m, int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1);

  // matvec_q8 of m activation rows at once (batched decode; same arguments as matmul_q8): row i of
  // Y [m, ldy] is BITWISE what matvec_q8(wq, ws, xq + i·cols, xs + i·(cols / group), y + i·ldy,
  // cols, group, r0, r1) writes, for every m >= 1 and row range; each weight group is loaded once
  // for up to 8 rows (unlike matmul_q8, whose f32 rounding differs from matvec_q8's).
  void (*matvec_q8_rows)(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs,
                         float* y, int64_t m, int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1);

  // matvec_q8_rows in two halves, so that a batched step prepares its activations once per product
  // and the threads' row blocks share them: q8_rows_prepare writes X [m, cols] in the table's own
  // layout into prep (q8_rows_prep_bytes(m, cols, group) bytes, 64-byte aligned), then
  // matvec_q8_prepared computes rows [r0, r1) of Y from it (any ranges, any threads), bitwise
  // matvec_q8_rows(wq, ws, xq, xs, y, m, cols, ldy, group, r0, r1).
  int64_t (*q8_rows_prep_bytes)(int64_t m, int64_t cols, int group);
  void (*q8_rows_prepare)(const int8_t* xq, const float* xs, int64_t m, int64_t cols, int group, uint8_t* prep);
  void (*matvec_q8_prepared)(const int8_t* wq, const float* ws, const uint8_t* prep, float* y, int64_t m,
                             int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1);

  // Columns [n0, n1) of C [m, n] = A [m, k] · B [k, n], B f16 ("weights [in,out]", batched prefill).
  void (*hgemm)(const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n,
                int64_t n0, int64_t n1);
  // Columns [n0, n1) of C [m, n] = A [m, k] · B [n, k]ᵀ, B f16 ("weights [out,in]", decode).
  void (*hgemm_trans)(const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n,
                      int64_t n0, int64_t n1);
  // The same two for f32 weights.
  void (*sgemm)(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n,
                int64_t n0, int64_t n1);
  void (*sgemm_trans)(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n,
                      int64_t n0, int64_t n1);
  // The same two for B in a q8_0 KV cache's rows (attention): int8 values bq, one f32 scale per
  // `group` values of a row in bs, each value read as widen_q8 widens it, float(q) · s. sgemm's B
  // [k, n] has scales [k, n / group], sgemm_trans's B [n, k] scales [n, k / group].
  void (*q8_gemm)(const float* a, const int8_t* bq, const float* bs, int64_t group, float* c, int64_t m, int64_t k,
                  int64_t n, int64_t n0, int64_t n1);
  void (*q8_gemm_trans)(const float* a, const int8_t* bq, const float* bs, int64_t group, float* c, int64_t m,
                        int64_t k, int64_t n, int64_t n0, int64_t n1);

  // Conversions (exact, including subnormals, Inf and NaN; a NaN becomes quiet with its payload
  // kept, as F16C and AArch64 FCVT do).
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);  // round to nearest even
  void (*bf16_to_f32)(const uint16_t* x, float* y, int64_t n);

  // f32 dot product and y += a·x.
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  void (*axpy_f32)(float a, const float* x, float* y, int64_t n);

  // Per-row int8 activations for gemm_i8: row i of X [m, k] gets s[i] = max|x_i| / 127 and
  // q[i, c] = round half away from zero of f32(x[i, c] · f32(127 / max|x_i|)), clamped to
  // [-127, 127] (NaN -> 0; a row of zeros gets s = 0, q = 0). Stored as the byte q + i8_zero
  // (mod 256) in rows of ldq >= k bytes; the bytes [k, ldq) hold the encoded zero.
  void (*quantize_i8)(const float* x, int64_t m, int64_t k, uint8_t* q, int64_t ldq, float* s);
  // Channels of panels [p0, p1) of Y [m, n] (row stride ldy) = (X_q · W_qᵀ) scaled, plus bias:
  //   y[i, j] = fma(float(Σ_k xq[i, k] · wq[j, k]), xs[i] · ws[j], bias ? bias[j] : 0)
  // for activations xq [m, ldx] as quantize_i8 of the same table encodes them (values in
  // [-127, 127], one scale xs[i] per row; ldx >= k4, the bytes past k are read but meet zero
  // weights). The int32 sum is exact (k <= 65536) and the two roundings are fixed, so every table
  // gives bit-identical results.
  void (*gemm_i8)(const uint8_t* xq, const float* xs, int64_t m, int64_t ldx, const I8Weights& w,
                  const float* bias, float* y, int64_t ldy, int64_t p0, int64_t p1);

  // Channels of panels [p0, p1) of Y [m, n] (row stride ldy) = X [m, k] · Wᵀ + bias (bias [n] or
  // null) for packed f32 weights; the sum over k may be taken in any order, but the same for
  // every m, row and thread split (a row's result does not depend on the batch around it).
  void (*sgemm_packed)(const float* x, int64_t m, const F32Panels& w, const float* bias, float* y, int64_t ldy,
                       int64_t p0, int64_t p1);

  // Scaled dot-product attention of one head over T positions, every query seeing every key (an
  // encoder; a padded batch passes each sequence's own rows only):
  //   out[t] = Σ_j softmax_j(scale · q[t]·k[j]) · v[j]   for t < T, scale > 0
  // q, k, v and out hold T rows of hd floats at stride ld (one head of a [T, H] matrix; out must
  // not overlap q, k or v). scratch: AttentionScratch(T, hd) floats.
  void (*attention)(const float* q, const float* k, const float* v, float* out, int64_t T, int64_t hd,
                    int64_t ld, float scale, float* scratch);

  // The encoding of quantize_i8's activations: 128 where the int8 dot product takes them as u8
  // (x + 128, VNNI's vpdpbusd), else 0 (plain int8).
  uint8_t i8_zero;

  // Quantized GGUF weights against 8-bit activations (see GgmlKernels).
  GgmlKernels ggml;
};

// Floats of scratch for KernelTable::attention: kᵀ [hd, T32] and up to 8 score rows [8, T32],
// T32 = T rounded up to 32 (whole score tiles for every table).
constexpr int64_t kAttentionMaxQueries = 8;
inline int64_t AttentionScratch(int64_t T, int64_t hd) { return (hd + kAttentionMaxQueries) * ((T + 31) / 32 * 32); }

// The table chosen for this CPU (or forced by WEIGHTMAP_ISA / SetIsa).
const KernelTable& Active();
// A specific table by name, or nullptr if this build or CPU lacks it.
const KernelTable* Find(const std::string& isa);
// Every table this build has AND this CPU can run, best last. "scalar" is always first.
const KernelTable* const* Available(int* count);
// Forces the active table (tests, benchmarks). Returns false if unavailable.
bool SetIsa(const std::string& isa);
// The names of t's null slots: none for every table Find returns (test/kernels/dispatch.test.ts).
std::vector<std::string> EmptySlots(const KernelTable& t);

// Elementwise and row kernels: memory-bound, one scalar implementation that compilers
// vectorize well; exact semantics in kernels_common.cc.
void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps);        // y = w·x/√(mean(x²)+eps)
void layernorm(const float* x, const float* g, const float* b, float* y, int64_t n, float eps);  // b may be null
void softmax(float* x, int64_t n);                                                    // in place, max-subtracted
// softmax in two pieces, for callers that fold the normalization into a later product:
float max_f32(const float* x, int64_t n);                                             // n >= 1
double exp_sum(float* x, int64_t n, float scale, float shift);  // x = e^(x·scale - shift) in place; returns Σ x
void silu_mul(const float* gate, const float* up, float* y, int64_t n);              // y = gate·σ(gate)·up
// y[i] = q[i]·scales[i / group] (n % group == 0): int8 rows with a scale per group of values, as f32.
void widen_q8(const int8_t* q, const float* scales, int64_t n, int64_t group, float* y);
void gelu_tanh(float* x, int64_t n);
void gelu_erf(float* x, int64_t n);
// RoPE on one head vector x[head_dim] at position pos, rotating the first rot_dim dims:
// half pairing (i, i + rot_dim/2) or interleaved (2i, 2i+1); angle = pos · theta^(-2i/rot_dim).
void rope(float* x, int64_t rot_dim, int64_t pos, float theta, bool interleaved);
// The same in two steps: cos/sin[rot_dim/2] of every angle at `pos`, then the rotation.
void rope_cos_sin(int64_t rot_dim, int64_t pos, float theta, float* cos_out, float* sin_out);
void rope_apply(float* x, int64_t rot_dim, const float* cos_v, const float* sin_v, bool interleaved);

}  // namespace kernels
}  // namespace weightmap
