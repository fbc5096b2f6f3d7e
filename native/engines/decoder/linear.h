// The weight matrices of the decoder ([out,in], applied as y = W·x) in the three layouts the
// kernels compute with, and the threaded products over them.
//
//   Q8   int8 values [rows, cols] + f32 scales, one per `group` consecutive elements of a row;
//        activations are quantized per group (runq style) and multiplied with matvec_q8 (one
//        token), matmul_q8 (a prefill batch) or matvec_q8_rows (a decode batch, bitwise matvec_q8).
//   F16  IEEE half [rows, cols] with hgemm_trans.
//   F32  float [rows, cols] with sgemm_trans.
//   Blocks  ggml blocks of any GGUF type, Q8_0 included (kernels/ggml_blocks.h), rows of whole blocks,
//        always used in place from the mapping; activations are quantized per 32 with sums
//        (KernelTable::ggml.quantize_act) and multiplied with ggml.matmul[type].
//
// A matrix points into the mapping when the stored bytes already have one of these layouts;
// otherwise (bf16, misaligned data, or a requested quantization) it owns a
// copy converted once at load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engines/decoder/weight_buffer.h"
#include "engines/weights_spec.h"

namespace weightmap {

class ThreadPool;

namespace decoder {

enum class MatrixKind { Q8, F16, F32, Blocks };

// What the loader may do with float weights.
enum class WeightQuant {
  Keep,  // use f32/f16 as stored (bf16 becomes f32); Q8_0 and ggml blocks stay as stored
  Q8,    // quantize f32/f16/bf16 matrices to Q8_0 (groups of the requested size) at load; ggml blocks stay
  F32,   // dequantize everything to f32: the exact path (no activation quantization)
};

// Counts of what preparing the weights cost, reported to JS.
struct LoadCost {
  uint64_t copied_bytes = 0;  // bytes allocated for converted copies
  int converted = 0;          // matrices converted (bf16, ggml_q8_0, misaligned, quantized, dequantized)
  std::vector<std::string> kept;  // matrices left as stored because the group size does not divide their rows
};

class Matrix {
 public:
  // Prepares `t` (a [rows, cols] tensor) for the kernels; conversions run across `pool`.
  // `group` is the Q8 group size used when `quant` is Q8.
  static Matrix Prepare(const TensorRef& t, WeightQuant quant, int group, LoadCost* cost, ThreadPool& pool);

  Matrix() = default;
  Matrix(Matrix&&) = default;  // the pointers follow the moved buffers
  Matrix& operator=(Matrix&&) = default;
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;

  MatrixKind kind() const { return kind_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int group() const { return group_; }
  const int8_t* q() const { return q_; }
  const float* s() const { return s_; }
  const uint16_t* h() const { return h_; }
  const float* f() const { return f_; }
  kernels::BlockType block() const { return block_; }
  const uint8_t* blocks() const { return blocks_; }  // Blocks: rows × RowBytes(block, cols) bytes

 private:
  MatrixKind kind_ = MatrixKind::F32;
  int64_t rows_ = 0, cols_ = 0;
  int group_ = 0;
  const int8_t* q_ = nullptr;
  const float* s_ = nullptr;
  const uint16_t* h_ = nullptr;
  const float* f_ = nullptr;
  kernels::BlockType block_ = kernels::BlockType::Q4_0;
  const uint8_t* blocks_ = nullptr;
  // Converted copies, when the mapping's bytes cannot be used as they are (huge pages where the
  // system gives them: decode streams them whole at every token, see decoder/weight_buffer.h).
  WeightBuffer q_own_;
  WeightBuffer s_own_;
  WeightBuffer f_own_;
};

// Row `r` of a [rows, cols] tensor of any engine dtype, as f32 (the embedding lookup: one row is
// dequantized from the mapping per token; the table is never copied whole).
void DequantizeRow(const TensorRef& t, int64_t r, float* out);

// Scratch for the quantized form of activations X [m, cols] (Q8 and Blocks weights). For Blocks
// the input is quantized by ggml.quantize_act (group 32, the same q and s as quantize_q8) with
// `sum` filled too, so a Q8 matrix of group 32 may share it.
struct QuantizedInput {
  std::vector<int8_t> q;     // [m, cols]
  std::vector<float> s;      // [m, cols / group]
  std::vector<int16_t> sum;  // [m, cols / 16] when has_sums
  const float* source = nullptr;
  int group = 0;
  bool has_sums = false;
  // RunLinearRows: q and s in the kernels' matvec_q8_prepared layout, made once per call and shared
  // by every row block (64-byte aligned inside `prepared`).
  std::vector<uint8_t> prepared;
  const uint8_t* prepared_at = nullptr;
};

// One product Y [m, rows] = X [m, cols] · Wᵀ.
struct LinearJob {
  const Matrix* w;
  const float* x;  // [m, w->cols()]
  float* y;        // [m, w->rows()]
};

// Runs the jobs (which share m) as one parallel region over their concatenated rows, so that
// q/k/v or gate/up cost one dispatch. Inputs of Q8 jobs are quantized first, once per distinct
// (input, group), into `scratch` (one entry per job at most).
void RunLinear(ThreadPool& pool, const LinearJob* jobs, int n_jobs, int64_t m, std::vector<QuantizedInput>& scratch);

// RunLinear with each of the m rows as its own one-token product (the kernels of m == 1), block
// of weight rows by block, so each block is read from memory once for all m rows while it is in
// cache: the decode step of several sessions, each row bitwise what RunLinear of it alone gives.
void RunLinearRows(ThreadPool& pool, const LinearJob* jobs, int n_jobs, int64_t m, std::vector<QuantizedInput>& scratch);

// A vector (norm weight, bias) [n] as f32, whatever float dtype it is stored in (a tiny owned
// copy); SpecError BAD_DTYPE for a quantized one.
std::vector<float> LoadVector(const WeightsSpec& spec, const std::string& name, int64_t n, LoadCost* cost);

}  // namespace decoder
}  // namespace weightmap
