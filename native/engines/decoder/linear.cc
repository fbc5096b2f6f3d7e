#include "engines/decoder/linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/ggml_blocks.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "threadpool.h"

namespace weightmap {
namespace decoder {

namespace {

bool Aligned(const void* p, size_t alignment) { return reinterpret_cast<uintptr_t>(p) % alignment == 0; }

float F16ToF32(uint16_t h) {
  float f;
  kernels::Active().f16_to_f32(&h, &f, 1);
  return f;
}

// One row of a ggml_q8_0 tensor ([cols / 32] blocks of {f16 scale, int8[32]}) as int8 + f32 scales.
void UnpackGgmlRow(const uint8_t* blocks, int64_t cols, int8_t* q, float* s) {
  for (int64_t b = 0; b < cols / 32; b++) {
    const uint8_t* block = blocks + b * 34;
    uint16_t scale;
    std::memcpy(&scale, block, 2);
    s[b] = F16ToF32(scale);
    std::memcpy(q + b * 32, block + 2, 32);
  }
}

}  // namespace

void DequantizeRow(const TensorRef& t, int64_t r, float* out) {
  const int64_t cols = t.shape.back();
  const kernels::KernelTable& k = kernels::Active();
  switch (t.dtype) {
    case DType::F32:
      std::memcpy(out, t.data + r * cols * 4, cols * 4);
      break;
    case DType::F16:
    case DType::BF16: {
      const uint8_t* src = t.data + r * cols * 2;
      std::vector<uint16_t> copy;  // only when the mapping's bytes are not 2-aligned
      if (!Aligned(src, 2)) {
        copy.resize(cols);
        std::memcpy(copy.data(), src, cols * 2);
        src = reinterpret_cast<const uint8_t*>(copy.data());
      }
      const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
      if (t.dtype == DType::F16) k.f16_to_f32(h, out, cols);
      else k.bf16_to_f32(h, out, cols);
      break;
    }
    case DType::Q8_0: {
      const int8_t* q = reinterpret_cast<const int8_t*>(t.data) + r * cols;
      for (int64_t g = 0; g < cols / t.group; g++) {
        float s;
        std::memcpy(&s, t.scales + ((r * cols) / t.group + g) * 4, 4);
        for (int i = 0; i < t.group; i++) out[g * t.group + i] = q[g * t.group + i] * s;
      }
      break;
    }
    case DType::GgmlQ8_0: {
      std::vector<int8_t> q(cols);
      std::vector<float> s(cols / 32);
      UnpackGgmlRow(t.data + r * (cols / 32) * 34, cols, q.data(), s.data());
      for (int64_t i = 0; i < cols; i++) out[i] = q[i] * s[i / 32];
      break;
    }
    case DType::GgmlBlocks:
      kernels::DequantizeBlocks(t.block, t.data + r * kernels::RowBytes(t.block, cols), out, cols);
      break;
  }
}

namespace {

// fn(r0, r1) over the rows [0, rows) of a conversion, across the pool.
template <typename Fn>
void ForRowChunks(ThreadPool& pool, int64_t rows, const Fn& fn) {
  pool.ParallelFor(rows, 16, [&](int64_t r0, int64_t r1) { fn(r0, r1); });
}

}  // namespace

Matrix Matrix::Prepare(const TensorRef& t, WeightQuant quant, int group, LoadCost* cost, ThreadPool& pool) {
  if (t.shape.size() != 2) throw SpecError("SHAPE_MISMATCH", "tensor " + t.Describe() + " is not a matrix");
  const kernels::KernelTable& k = kernels::Active();
  Matrix m;
  m.rows_ = t.shape[0];
  m.cols_ = t.shape[1];
  const int64_t n = t.numel;
  // Every row dequantized to an owned f32 copy.
  auto f32_copy = [&]() {
    m.kind_ = MatrixKind::F32;
    m.f_own_.Allocate(n * sizeof(float));
    float* f = m.f_own_.as<float>();
    ForRowChunks(pool, m.rows_, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) DequantizeRow(t, r, f + r * m.cols_);
    });
    m.f_ = f;
    cost->copied_bytes += n * 4;
    cost->converted++;
    return std::move(m);
  };

  // Stored Q8 (groups along the flattened tensor, which must not straddle rows).
  if (t.dtype == DType::Q8_0 || t.dtype == DType::GgmlQ8_0) {
    const int stored_group = t.group;
    if (m.cols_ % stored_group != 0)
      throw SpecError("SHAPE_MISMATCH", "tensor " + t.Describe() + ": rows of " + std::to_string(m.cols_) +
                                            " elements are not whole groups of " + std::to_string(stored_group));
    if (quant == WeightQuant::F32) return f32_copy();
    if (t.dtype == DType::GgmlQ8_0) {  // ggml's 34-byte blocks, used in place like the other types
      m.kind_ = MatrixKind::Blocks;
      m.block_ = kernels::BlockType::Q8_0;
      m.blocks_ = t.data;
      return m;
    }
    m.kind_ = MatrixKind::Q8;
    m.group_ = stored_group;
    m.q_ = reinterpret_cast<const int8_t*>(t.data);
    if (Aligned(t.scales, 4)) {
      m.s_ = reinterpret_cast<const float*>(t.scales);
    } else {
      m.s_own_.Allocate(n / stored_group * sizeof(float));
      std::memcpy(m.s_own_.as<float>(), t.scales, m.s_own_.bytes());
      m.s_ = m.s_own_.as<float>();
      cost->copied_bytes += m.s_own_.bytes();
    }
    return m;
  }

  // Other ggml blocks: in place, or dequantized for the exact path.
  if (t.dtype == DType::GgmlBlocks) {
    if (quant == WeightQuant::F32) return f32_copy();
    m.kind_ = MatrixKind::Blocks;
    m.block_ = t.block;
    m.blocks_ = t.data;
    return m;
  }

  // Float weights.
  const bool can_quantize = quant == WeightQuant::Q8 && group > 0 && m.cols_ % group == 0;
  if (quant == WeightQuant::Q8 && !can_quantize) cost->kept.push_back(t.name);
  if (can_quantize) {
    m.kind_ = MatrixKind::Q8;
    m.group_ = group;
    m.q_own_.Allocate(n);
    m.s_own_.Allocate(n / group * sizeof(float));
    int8_t* q = m.q_own_.as<int8_t>();
    float* s = m.s_own_.as<float>();
    ForRowChunks(pool, m.rows_, [&](int64_t r0, int64_t r1) {
      std::vector<float> row(m.cols_);
      for (int64_t r = r0; r < r1; r++) {
        DequantizeRow(t, r, row.data());
        k.quantize_q8(row.data(), m.cols_, group, q + r * m.cols_, s + r * (m.cols_ / group));
      }
    });
    m.q_ = q;
    m.s_ = s;
    cost->copied_bytes += n + n / group * 4;
    cost->converted++;
    return m;
  }
  if (t.dtype == DType::F16 && quant != WeightQuant::F32 && Aligned(t.data, 2)) {
    m.kind_ = MatrixKind::F16;
    m.h_ = reinterpret_cast<const uint16_t*>(t.data);
    return m;
  }
  if (t.dtype == DType::F32 && Aligned(t.data, 4)) {
    m.kind_ = MatrixKind::F32;
    m.f_ = reinterpret_cast<const float*>(t.data);
    return m;
  }
  // bf16, f16 asked as f32, or misaligned f32: one converted copy.
  return f32_copy();
}

namespace {

// Activations quantized on the calling thread up to this many values (8 rows of 8192).
constexpr int64_t kSerialQuantize = int64_t(1) << 16;

// Quantizes the inputs of the Q8 and Blocks jobs, one per distinct (x, group), into `scratch`;
// xin[j] is job j's (null for float matrices).
void QuantizeInputs(ThreadPool& pool, const LinearJob* jobs, int n_jobs, int64_t m, std::vector<QuantizedInput>& scratch,
                    QuantizedInput** xin) {
  const kernels::KernelTable& k = kernels::Active();
  // Every entry this call may take, up front: growing the vector later would move the entries
  // that earlier jobs' xin already point at.
  if (scratch.size() < size_t(n_jobs)) scratch.resize(size_t(n_jobs));
  size_t used = 0;
  for (int j = 0; j < n_jobs; j++) {
    const Matrix& w = *jobs[j].w;
    if (w.kind() != MatrixKind::Q8 && w.kind() != MatrixKind::Blocks) continue;
    const bool sums = w.kind() == MatrixKind::Blocks;
    const int group = sums ? kernels::kActBlock : w.group();
    for (size_t u = 0; u < used; u++)
      if (scratch[u].source == jobs[j].x && scratch[u].group == group && (scratch[u].has_sums || !sums)) xin[j] = &scratch[u];
    if (xin[j]) continue;
    if (scratch.size() <= used) scratch.resize(used + 1);
    QuantizedInput& qi = scratch[used++];
    const int64_t cols = w.cols();
    qi.source = jobs[j].x;
    qi.group = group;
    qi.has_sums = sums;
    if (static_cast<int64_t>(qi.q.size()) < m * cols) qi.q.resize(m * cols);
    if (static_cast<int64_t>(qi.s.size()) < m * cols / group) qi.s.resize(m * cols / group);
    if (sums && static_cast<int64_t>(qi.sum.size()) < m * cols / 16) qi.sum.resize(m * cols / 16);
    int8_t* q = qi.q.data();
    float* s = qi.s.data();
    int16_t* sum = qi.sum.data();
    const float* x = jobs[j].x;
    auto quantize_rows = [&](int64_t b, int64_t e) {
      if (!sums) {
        k.quantize_q8(x + b * cols, (e - b) * cols, group, q + b * cols, s + b * (cols / group));
        return;
      }
      k.ggml.quantize_act(x + b * cols, (e - b) * cols, q + b * cols, s + b * (cols / group), sum + b * (cols / 16));
    };
    // A decode batch (a few rows) takes microseconds: less than waking the pool for it.
    if (m * cols <= kSerialQuantize) quantize_rows(0, m);
    else pool.ParallelFor(m, 1, quantize_rows);
    xin[j] = &qi;
  }
  for (size_t u = 0; u < used; u++) scratch[u].source = nullptr;  // the buffers behind x change after this call
}

// Columns [r0, r1) of Y [m, rows] = X · Wᵀ for the m activation rows from `row` on.
void Product(const LinearJob& job, const QuantizedInput* xin, int64_t row, int64_t m, int64_t r0, int64_t r1) {
  const kernels::KernelTable& k = kernels::Active();
  const Matrix& w = *job.w;
  const int64_t rows = w.rows(), cols = w.cols();
  const float* x = job.x + row * cols;
  float* y = job.y + row * rows;
  switch (w.kind()) {
    case MatrixKind::Q8: {
      const int8_t* xq = xin->q.data() + row * cols;
      const float* xs = xin->s.data() + row * (cols / w.group());
      if (m == 1) k.matvec_q8(w.q(), w.s(), xq, xs, y, cols, w.group(), r0, r1);
      else k.matmul_q8(w.q(), w.s(), xq, xs, y, m, cols, rows, w.group(), r0, r1);
      break;
    }
    case MatrixKind::F16:
      k.hgemm_trans(x, w.h(), y, m, cols, rows, r0, r1);
      break;
    case MatrixKind::F32:
      k.sgemm_trans(x, w.f(), y, m, cols, rows, r0, r1);
      break;
    case MatrixKind::Blocks: {
      kernels::Q8Act a;
      a.m = m, a.n = cols, a.q = xin->q.data() + row * cols, a.d = xin->s.data() + row * (cols / kernels::kActBlock);
      a.sum = xin->sum.data() + row * (cols / 16);
      k.ggml.matmul[static_cast<int>(w.block())](w.blocks(), a, y, rows, r0, r1);
      break;
    }
  }
}

// Runs fn(j, r0, r1) for the rows [b, e) of the jobs' concatenated rows that fall in job j.
template <typename Fn>
void ForJobRows(const LinearJob* jobs, int n_jobs, int64_t b, int64_t e, const Fn& fn) {
  int64_t offset = 0;
  for (int j = 0; j < n_jobs; j++) {
    const int64_t rows = jobs[j].w->rows();
    const int64_t r0 = std::max(b, offset) - offset, r1 = std::min(e, offset + rows) - offset;
    if (r0 < r1) fn(j, r0, r1);
    offset += rows;
  }
}

// Each job's quantized input (null for float matrices): on the stack for up to 8 jobs (the dense
// layers' calls), on the heap for more (an MoE layer's experts).
class JobInputs {
 public:
  explicit JobInputs(int n_jobs) : heap_(n_jobs > 8 ? n_jobs : 0, nullptr) {}
  QuantizedInput** get() { return heap_.empty() ? stack_ : heap_.data(); }

 private:
  QuantizedInput* stack_[8] = {};
  std::vector<QuantizedInput*> heap_;
};

int64_t TotalRows(const LinearJob* jobs, int n_jobs) {
  int64_t total = 0;
  for (int j = 0; j < n_jobs; j++) total += jobs[j].w->rows();
  return total;
}

// Multiply-adds per activation row of the jobs together.
int64_t TotalWork(const LinearJob* jobs, int n_jobs) {
  int64_t total = 0;
  for (int j = 0; j < n_jobs; j++) total += jobs[j].w->rows() * jobs[j].w->cols();
  return total;
}

}  // namespace

void RunLinear(ThreadPool& pool, const LinearJob* jobs, int n_jobs, int64_t m, std::vector<QuantizedInput>& scratch) {
  // One token: the activations prepared once for every row block (matvec_q8 would prepare them
  // again in each block: 16 blocks per call at 2 threads), each row bitwise matvec_q8's.
  if (m == 1) return RunLinearRows(pool, jobs, n_jobs, 1, scratch);
  JobInputs inputs(n_jobs);
  QuantizedInput** xin = inputs.get();
  QuantizeInputs(pool, jobs, n_jobs, m, scratch, xin);
  auto rows_fn = [&](int64_t b, int64_t e) {
    ForJobRows(jobs, n_jobs, b, e, [&](int j, int64_t r0, int64_t r1) { Product(jobs[j], xin[j], 0, m, r0, r1); });
  };
  // A batch: one chunk per thread (matmul_q8 relays out X once per call).
  const int64_t total = TotalRows(jobs, n_jobs);
  if (m * TotalWork(jobs, n_jobs) < kernels::kMinParallelRowWork) rows_fn(0, total);
  else pool.ParallelFor(total, 16, rows_fn);
}

void RunLinearRows(ThreadPool& pool, const LinearJob* jobs, int n_jobs, int64_t m, std::vector<QuantizedInput>& scratch) {
  JobInputs inputs(n_jobs);
  QuantizedInput** xin = inputs.get();
  QuantizeInputs(pool, jobs, n_jobs, m, scratch, xin);
  const kernels::KernelTable& k = kernels::Active();
  // The Q8 inputs in matvec_q8_prepared's layout, once per distinct input (not once per row block).
  for (int j = 0; j < n_jobs; j++) {
    const Matrix& w = *jobs[j].w;
    if (w.kind() != MatrixKind::Q8) continue;
    QuantizedInput& qi = *xin[j];
    bool done = false;
    for (int i = 0; i < j; i++) done = done || (xin[i] == xin[j] && jobs[i].w->kind() == MatrixKind::Q8);
    if (done) continue;
    const size_t bytes = size_t(k.q8_rows_prep_bytes(m, w.cols(), w.group()));
    if (qi.prepared.size() < bytes + 64) qi.prepared.resize(bytes + 64);
    uint8_t* at = qi.prepared.data();
    at += (64 - reinterpret_cast<uintptr_t>(at) % 64) % 64;
    k.q8_rows_prepare(qi.q.data(), qi.s.data(), m, w.cols(), w.group(), at);
    qi.prepared_at = at;
  }
  // Per block of 16 weight rows, every activation row: the block is read from memory once. A ggml
  // kernel's result for a row does not depend on m (GgmlKernels::matmul, kernels.h), so Blocks take
  // all m rows in one call, tiled; Q8 takes them in matvec_q8_prepared (bitwise matvec_q8 per row);
  // the float gemms round differently from their m == 1 forms, so those go one row at a time.
  auto rows_fn = [&](int64_t b, int64_t e) {
    ForJobRows(jobs, n_jobs, b, e, [&](int j, int64_t r0, int64_t r1) {
      const Matrix& w = *jobs[j].w;
      if (w.kind() == MatrixKind::Blocks) {
        Product(jobs[j], xin[j], 0, m, r0, r1);
      } else if (w.kind() == MatrixKind::Q8) {
        k.matvec_q8_prepared(w.q(), w.s(), xin[j]->prepared_at, jobs[j].y, m, w.cols(), w.rows(), w.group(), r0, r1);
      } else {
        for (int64_t i = 0; i < m; i++) Product(jobs[j], xin[j], i, 1, r0, r1);
      }
    });
  };
  if (m * TotalWork(jobs, n_jobs) < kernels::kMinParallelRowWork) rows_fn(0, TotalRows(jobs, n_jobs));
  else kernels::ParallelRowBlocks(&pool, TotalRows(jobs, n_jobs), 16, rows_fn);
}

std::vector<float> LoadVector(const WeightsSpec& spec, const std::string& name, int64_t n, LoadCost* cost) {
  const TensorRef& t = spec.Require(name, {n});
  if (t.dtype == DType::Q8_0 || t.dtype == DType::GgmlQ8_0 || t.dtype == DType::GgmlBlocks)
    throw SpecError("BAD_DTYPE", "vector " + t.Describe() + " must be f32, f16 or bf16");
  std::vector<float> out(n);
  TensorRef row = t;
  row.shape = {1, n};
  DequantizeRow(row, 0, out.data());
  cost->copied_bytes += n * 4;
  return out;
}

}  // namespace decoder
}  // namespace weightmap
