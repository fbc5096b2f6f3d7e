#include "engines/bert.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "kernels/ggml_blocks.h"
#include "kernels/kernels.h"
#include "kernels/i8_matrix.h"
#include "kernels/parallel.h"

namespace weightmap {
namespace bert {

namespace {

std::string LayerName(int64_t l, const char* rest) { return "encoder.layer." + std::to_string(l) + "." + rest; }

bool Aligned(const void* p, size_t alignment) { return reinterpret_cast<uintptr_t>(p) % alignment == 0; }

// Row r of a [rows, cols] tensor as f32 (cols = the last dimension). Reads unaligned bytes
// through memcpy: the mapping promises no alignment.
void ReadRow(const TensorRef& t, int64_t r, float* out) {
  const int64_t cols = t.shape.back();
  const kernels::KernelTable& k = kernels::Active();
  switch (t.dtype) {
    case DType::F32:
      std::memcpy(out, t.data + r * cols * 4, cols * 4);
      return;
    case DType::F16:
    case DType::BF16: {
      std::vector<uint16_t> half(cols);
      std::memcpy(half.data(), t.data + r * cols * 2, cols * 2);
      if (t.dtype == DType::F16)
        k.f16_to_f32(half.data(), out, cols);
      else
        k.bf16_to_f32(half.data(), out, cols);
      return;
    }
    case DType::Q8_0: {
      // int8 values, one f32 scale per `group` consecutive elements of the flattened tensor.
      const int8_t* q = reinterpret_cast<const int8_t*>(t.data) + r * cols;
      for (int64_t i = 0; i < cols; i++) {
        float s;
        std::memcpy(&s, t.scales + ((r * cols + i) / t.group) * 4, 4);
        out[i] = q[i] * s;
      }
      return;
    }
    case DType::GgmlQ8_0: {
      // Blocks of 32: an f16 scale, then 32 int8.
      const uint8_t* blocks = t.data + r * (cols / 32) * 34;
      for (int64_t b = 0; b < cols / 32; b++) {
        uint16_t h;
        std::memcpy(&h, blocks + b * 34, 2);
        float s;
        k.f16_to_f32(&h, &s, 1);
        const int8_t* q = reinterpret_cast<const int8_t*>(blocks + b * 34 + 2);
        for (int i = 0; i < 32; i++) out[b * 32 + i] = q[i] * s;
      }
      return;
    }    case DType::GgmlBlocks:
      kernels::DequantizeBlocks(t.block, t.data + r * kernels::RowBytes(t.block, cols), out, cols);
      return;
  }
}

// A bias or LayerNorm vector as an owned f32 copy (they are tiny). `optional`: zeros when absent
// (nomic-bert has no biases).
std::vector<float> LoadVector(const WeightsSpec& spec, const std::string& name, int64_t n, LoadCost* cost, bool optional = false) {
  if (optional && spec.Find(name) == nullptr) {
    cost->copied_bytes += n * 4;
    return std::vector<float>(n, 0.0f);
  }
  const TensorRef& t = spec.Require(name, {n});
  std::vector<float> out(n);
  TensorRef row = t;
  row.shape = {1, n};
  ReadRow(row, 0, out.data());
  cost->copied_bytes += n * 4;
  return out;
}

constexpr int kQ8Group = 32;

// W [rows, cols] for the kernels: f16 as stored in the mapping, or a copy: quantized (`quant`),
// else f32 panels.
Linear PrepareLinear(const TensorRef& t, Quant quant, LoadCost* cost) {
  if ((t.dtype == DType::Q8_0 || t.dtype == DType::GgmlQ8_0) && t.shape[1] % t.group != 0)
    throw SpecError("SHAPE_MISMATCH", "rows of " + t.Describe() + " are not whole groups of " + std::to_string(t.group));
  Linear w;
  w.rows = t.shape[0];
  w.cols = t.shape[1];
  const int64_t n = t.numel;
  const kernels::KernelTable& k = kernels::Active();
  std::vector<float> row(w.cols);
  if (quant == Quant::Int8 && w.cols <= 65536) {
    w.kind = Linear::Kind::I8;
    w.i8 = std::make_unique<kernels::I8Matrix>(w.rows, w.cols);
    for (int64_t r = 0; r < w.rows; r++) {
      ReadRow(t, r, row.data());
      w.i8->SetRow(r, row.data());
    }
    cost->copied_bytes += w.i8->bytes();
    cost->converted++;
    return w;
  }
  if (quant == Quant::Q8_0 && w.cols % kQ8Group == 0) {
    w.kind = Linear::Kind::Q8;
    w.group = kQ8Group;
    w.q_own.resize(n);
    w.s_own.resize(n / kQ8Group);
    for (int64_t r = 0; r < w.rows; r++) {
      ReadRow(t, r, row.data());
      k.quantize_q8(row.data(), w.cols, kQ8Group, &w.q_own[r * w.cols], &w.s_own[r * (w.cols / kQ8Group)]);
    }
    w.q = w.q_own.data();
    w.s = w.s_own.data();
    cost->copied_bytes += n + n / kQ8Group * 4;
    cost->converted++;
    return w;
  }
  if (t.dtype == DType::F16 && Aligned(t.data, 2)) {
    w.kind = Linear::Kind::F16;
    w.h = reinterpret_cast<const uint16_t*>(t.data);
    return w;
  }
  // f32 (and any other dtype) is copied once into panels: sgemm_packed reads them in address
  // order and packs nothing per call.
  w.f32 = std::make_unique<kernels::F32Matrix>(w.rows, w.cols);
  for (int64_t r = 0; r < w.rows; r++) {
    ReadRow(t, r, row.data());
    w.f32->SetRow(r, row.data());
  }
  cost->copied_bytes += w.f32->bytes();
  cost->converted++;
  return w;
}

// Splits rows [0, n) of a row-wise job over the pool, keeping small jobs on the calling thread:
// a chunk is at least ~32K elements of `width` each.
void ForRows(ThreadPool& pool, int64_t n, int64_t width, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(width, 1));
  if (n <= grain || pool.size() == 1) {
    fn(0, n);
    return;
  }
  pool.ParallelFor(n, grain, fn);
}

// Storage for a quantized layer input, reused by every layer of a call.
struct QuantBuffers {
  std::vector<uint8_t> q;
  std::vector<float> s;
};

// A layer input X [m, cols], quantized the first time a weight needs it, in that weight's form:
// Q8_0 groups (int8 rows of `cols` bytes, cols / group scales each) or quantize_i8's per-row
// form (rows of k4 bytes, one scale each).
class Input {
 public:
  enum class Form { None, Q8_0, I8 };
  Input(const float* x, int64_t m, int64_t cols, QuantBuffers& buffers) : x_(x), m_(m), cols_(cols), buf_(&buffers) {}
  const float* x() const { return x_; }

  // For the loop that writes X: when `w` takes per-row int8, declares that form so that the loop
  // quantizes each row as soon as it is written (Rows), while it is still in L1.
  Input* FuseFor(const Linear& w) {
    if (w.kind != Linear::Kind::I8) return nullptr;
    const int64_t ld = w.i8->view().k4;
    Reserve(m_ * ld, m_);
    form_ = Form::I8;
    ld_ = ld;
    return this;
  }
  // Rows [r0, r1) in the declared per-row int8 form (any thread, disjoint rows).
  void Rows(int64_t r0, int64_t r1) {
    kernels::Active().quantize_i8(x_ + r0 * cols_, r1 - r0, cols_, buf_->q.data() + r0 * ld_, ld_, buf_->s.data() + r0);
  }

  // Q8_0 with groups of `group`.
  void QuantizeQ8(ThreadPool& pool, int group) {
    if (form_ == Form::Q8_0 && group_ == group) return;
    Reserve(m_ * cols_, m_ * cols_ / group);
    form_ = Form::Q8_0;
    group_ = group;
    const kernels::KernelTable& k = kernels::Active();
    int8_t* q = reinterpret_cast<int8_t*>(buf_->q.data());
    ForRowBlocks(pool, [&](int64_t r0, int64_t r1) {
      k.quantize_q8(x_ + r0 * cols_, (r1 - r0) * cols_, group, q + r0 * cols_, buf_->s.data() + r0 * cols_ / group);
    });
  }
  // Per-row int8 (quantize_i8) in rows of `ld` bytes.
  void QuantizeI8(ThreadPool& pool, int64_t ld) {
    if (form_ == Form::I8 && ld_ == ld) return;
    Reserve(m_ * ld, m_);
    form_ = Form::I8;
    ld_ = ld;
    ForRowBlocks(pool, [&](int64_t r0, int64_t r1) { Rows(r0, r1); });
  }
  const uint8_t* q() const { return buf_->q.data(); }
  const int8_t* q8() const { return reinterpret_cast<const int8_t*>(buf_->q.data()); }
  const float* s() const { return buf_->s.data(); }
  int64_t ld() const { return ld_; }

 private:
  void Reserve(int64_t q_bytes, int64_t scales) {
    if (buf_->q.size() < size_t(q_bytes)) buf_->q.resize(q_bytes);
    if (buf_->s.size() < size_t(scales)) buf_->s.resize(scales);
  }
  void ForRowBlocks(ThreadPool& pool, const std::function<void(int64_t, int64_t)>& rows) {
    const int64_t grain = std::max<int64_t>(1, 16384 / cols_);
    if (m_ <= grain) rows(0, m_); else pool.ParallelFor(m_, grain, rows);
  }

  const float* x_;
  int64_t m_, cols_;
  QuantBuffers* buf_;  // q [m, cols] (Q8_0) or [m, ld] (I8); s [m, cols / group] or [m]
  Form form_ = Form::None;
  int group_ = 0;
  int64_t ld_ = 0;
};

// y [m, rows] = x [m, cols] · Wᵀ + bias, the columns split across the pool.
void Product(ThreadPool& pool, const Linear& w, Input& in, int64_t m, const std::vector<float>& bias, float* y) {
  switch (w.kind) {
    case Linear::Kind::F32:
      kernels::SgemmPacked(&pool, in.x(), m, w.f32->view(), bias.data(), y, w.rows);
      return;  // the kernel added the bias
    case Linear::Kind::F16:
      kernels::HgemmTrans(&pool, in.x(), w.h, y, m, w.cols, w.rows);
      break;
    case Linear::Kind::Q8:
      in.QuantizeQ8(pool, w.group);
      kernels::MatmulQ8(&pool, w.q, w.s, in.q8(), in.s(), y, m, w.rows, w.cols, w.rows, w.group);
      break;
    case Linear::Kind::I8: {
      const kernels::I8Weights v = w.i8->view();
      in.QuantizeI8(pool, v.k4);
      kernels::GemmI8(&pool, in.q(), in.s(), m, in.ld(), v, bias.data(), y, w.rows);
      return;  // the kernel added the bias
    }
  }
  ForRows(pool, m, w.rows, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++)
      for (int64_t j = 0; j < w.rows; j++) y[t * w.rows + j] += bias[j];
  });
}

// A [rows, cols] embedding table read row by row from the mapping.
const TensorRef& RequireTable(const WeightsSpec& spec, const std::string& name, int64_t rows, int64_t cols) {
  const TensorRef& t = spec.Require(name, {rows, cols});
  if ((t.dtype == DType::Q8_0 || t.dtype == DType::GgmlQ8_0) && cols % t.group != 0)
    throw SpecError("SHAPE_MISMATCH", "rows of " + t.Describe() + " are not whole groups of " + std::to_string(t.group));
  return t;
}

}  // namespace

void Config::Validate() const {
  auto fail = [](const std::string& what) { throw SpecError("CONFIG_MISMATCH", what); };
  if (hidden <= 0 || layers <= 0 || heads <= 0 || intermediate <= 0 || vocab <= 0 || max_positions <= 0 || type_vocab <= 0)
    fail("BERT sizes must be positive");
  if (hidden % heads != 0)
    fail("hiddenSize (" + std::to_string(hidden) + ") is not a multiple of numHeads (" + std::to_string(heads) + ")");
  if (rotary && (head_dim() % 2 != 0 || position_offset != 0 || !(rope_base > 0)))
    fail("rotary positions need an even head size, no position offset and a positive base");
  if (rotary && max_positions > (int64_t{1} << 24)) fail("maxPositionEmbeddings is too large for a rotary table");
  if (vocab > INT32_MAX) fail("vocabSize does not fit token ids");
  if (position_offset < 0 || position_offset >= max_positions)
    fail("positionOffset (" + std::to_string(position_offset) + ") must be in [0, maxPositionEmbeddings)");
  if (!(eps > 0) || !(eps < 1)) fail("layerNormEps must be in (0, 1)");
  if (labels < 0 || labels > (int64_t{1} << 20)) fail("numLabels must be in [0, 2^20]");
}

std::shared_ptr<Model> Model::Load(const Config& config, std::shared_ptr<const WeightsSpec> spec, const Options& options) {
  const auto start = std::chrono::steady_clock::now();
  config.Validate();
  auto model = std::shared_ptr<Model>(new Model());
  Model& m = *model;
  m.config_ = config;
  m.spec_ = spec;
  m.quant_ = options.quant;
  const WeightsSpec& s = *spec;
  const Config& c = config;
  const int64_t H = c.hidden, I = c.intermediate;
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    return PrepareLinear(s.Require(name, {rows, cols}), options.quant, &m.cost_);
  };

  m.word_ = &RequireTable(s, "embeddings.word_embeddings.weight", c.vocab, H);
  if (c.rotary) {
    // cos/sin of p·base^(-2i/hd) for every position, as HF's rotary cache (f32 inverse
    // frequencies, angles in f32, then cos/sin).
    const int64_t half = c.head_dim() / 2;
    m.rope_cos_.resize(c.max_positions * half);
    m.rope_sin_.resize(c.max_positions * half);
    for (int64_t i = 0; i < half; i++) {
      const float inv = 1.0f / std::pow(c.rope_base, static_cast<float>(2 * i) / static_cast<float>(c.head_dim()));
      for (int64_t p = 0; p < c.max_positions; p++) {
        const float angle = static_cast<float>(p) * inv;
        m.rope_cos_[p * half + i] = std::cos(angle);
        m.rope_sin_[p * half + i] = std::sin(angle);
      }
    }
    m.cost_.copied_bytes += 2 * c.max_positions * half * 4;
  } else {
    m.position_ = &RequireTable(s, "embeddings.position_embeddings.weight", c.max_positions, H);
  }
  const TensorRef& types = RequireTable(s, "embeddings.token_type_embeddings.weight", c.type_vocab, H);
  m.types_.resize(c.type_vocab * H);
  for (int64_t r = 0; r < c.type_vocab; r++) ReadRow(types, r, &m.types_[r * H]);
  m.cost_.copied_bytes += c.type_vocab * H * 4;
  m.emb_ln_g_ = LoadVector(s, "embeddings.LayerNorm.weight", H, &m.cost_);
  m.emb_ln_b_ = LoadVector(s, "embeddings.LayerNorm.bias", H, &m.cost_);

  m.layers_.resize(c.layers);
  for (int64_t l = 0; l < c.layers; l++) {
    Layer& L = m.layers_[l];
    L.wq = matrix(LayerName(l, "attention.self.query.weight"), H, H);
    L.wk = matrix(LayerName(l, "attention.self.key.weight"), H, H);
    L.wv = matrix(LayerName(l, "attention.self.value.weight"), H, H);
    L.wo = matrix(LayerName(l, "attention.output.dense.weight"), H, H);
    L.w1 = matrix(LayerName(l, "intermediate.dense.weight"), I, H);
    if (c.swiglu) L.wg = matrix(LayerName(l, "intermediate.gate.weight"), I, H);
    if (c.swiglu && m.zero_i_.empty()) m.zero_i_.assign(I, 0.0f);
    L.w2 = matrix(LayerName(l, "output.dense.weight"), H, I);
    L.bq = LoadVector(s, LayerName(l, "attention.self.query.bias"), H, &m.cost_, c.rotary);
    L.bk = LoadVector(s, LayerName(l, "attention.self.key.bias"), H, &m.cost_, c.rotary);
    L.bv = LoadVector(s, LayerName(l, "attention.self.value.bias"), H, &m.cost_, c.rotary);
    L.bo = LoadVector(s, LayerName(l, "attention.output.dense.bias"), H, &m.cost_, c.rotary);
    L.b1 = LoadVector(s, LayerName(l, "intermediate.dense.bias"), I, &m.cost_, c.rotary);
    L.b2 = LoadVector(s, LayerName(l, "output.dense.bias"), H, &m.cost_, c.rotary);
    L.ln1_g = LoadVector(s, LayerName(l, "attention.output.LayerNorm.weight"), H, &m.cost_);
    L.ln1_b = LoadVector(s, LayerName(l, "attention.output.LayerNorm.bias"), H, &m.cost_);
    L.ln2_g = LoadVector(s, LayerName(l, "output.LayerNorm.weight"), H, &m.cost_);
    L.ln2_b = LoadVector(s, LayerName(l, "output.LayerNorm.bias"), H, &m.cost_);
  }
  if (c.labels > 0) {
    auto table = [&](const std::string& name, int64_t rows, int64_t cols) {
      const TensorRef& t = s.Require(name, {rows, cols});
      std::vector<float> out(rows * cols);
      for (int64_t r = 0; r < rows; r++) ReadRow(t, r, &out[r * cols]);
      m.cost_.copied_bytes += rows * cols * 4;
      return out;
    };
    if (c.pooler) {
      m.pooler_w_ = table("pooler.dense.weight", H, H);
      m.pooler_b_ = LoadVector(s, "pooler.dense.bias", H, &m.cost_);
    }
    m.cls_w_ = table("classifier.weight", c.labels, H);
    m.cls_b_ = LoadVector(s, "classifier.bias", c.labels, &m.cost_);
  }
  m.pool_ = std::make_unique<ThreadPool>(options.threads);
  m.load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return model;
}

// The activations of one packed batch of N tokens.
struct Model::Scratch {
  std::vector<float> x;     // [N, H] hidden states (the residual stream)
  std::vector<float> q;     // [N, H] queries, head h = columns [h·hd, (h+1)·hd)
  std::vector<float> k;     // [N, H] keys
  std::vector<float> v;     // [N, H] values
  std::vector<float> ctx;   // [N, H] attention output, heads concatenated
  std::vector<float> proj;  // [N, H] output of wo / w2 plus its bias, before the residual add and LayerNorm
  std::vector<float> ff;    // [N, I] intermediate activations
  std::vector<float> gate;  // [N, I] SwiGLU gate
  QuantBuffers quantized;   // the current layer input, quantized (int8 weights only)
};

Model::~Model() = default;

std::unique_ptr<Model::Scratch> Model::TakeScratch() const {
  std::lock_guard<std::mutex> lock(scratch_mu_);
  if (spare_scratch_.empty()) return std::make_unique<Scratch>();
  std::unique_ptr<Scratch> s = std::move(spare_scratch_.back());
  spare_scratch_.pop_back();
  return s;
}

void Model::ReturnScratch(std::unique_ptr<Scratch> scratch) const {
  std::lock_guard<std::mutex> lock(scratch_mu_);
  spare_scratch_.push_back(std::move(scratch));
}

void Model::Attention(const float* q, const float* k, const float* v, float* ctx, const int64_t* starts,
                      const int32_t* lengths, int64_t n_seq) const {
  const int64_t H = config_.hidden, hd = config_.head_dim(), n_heads = config_.heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  int64_t longest = 0;
  for (int64_t i = 0; i < n_seq; i++) longest = std::max<int64_t>(longest, lengths[i]);

  // One task per (sequence, head), over that sequence's own rows only: the padding mask.
  const kernels::KernelTable& table = kernels::Active();
  auto tasks = [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(kernels::AttentionScratch(longest, hd));
    for (int64_t task = begin; task < end; task++) {
      const int64_t seq = task / n_heads, h = task % n_heads;
      const int64_t offset = starts[seq] * H + h * hd;
      table.attention(q + offset, k + offset, v + offset, ctx + offset, lengths[seq], hd, H, scale, scratch.data());
    }
  };
  // Short batches (a few hundred thousand multiply-adds) are not worth waking the pool for.
  double work = 0;
  for (int64_t i = 0; i < n_seq; i++) work += 2.0 * lengths[i] * lengths[i] * H;
  if (work < (1 << 20) || pool_->size() == 1)
    tasks(0, n_seq * n_heads);
  else
    pool_->ParallelFor(n_seq * n_heads, 1, tasks);
}

// A scratch leased for one call and handed back on every exit (an abort throws).
struct Model::Lease {
  const Model* model;
  std::unique_ptr<Scratch> scratch;
  ~Lease() { model->ReturnScratch(std::move(scratch)); }
};

void Model::Layers(const int32_t* ids, const int32_t* types, const int32_t* lengths, int64_t n_seq, Scratch& s,
                   std::vector<int64_t>& starts, const std::atomic<bool>& abort) const {
  ThrowIfAborted(abort);
  const Config& c = config_;
  const int64_t H = c.hidden, I = c.intermediate;
  ThreadPool& pool = *pool_;
  starts.assign(n_seq, 0);  // first row of each sequence in the packed batch
  int64_t N = 0;
  for (int64_t i = 0; i < n_seq; i++) {
    starts[i] = N;
    N += lengths[i];
  }

  s.x.resize(N * H);
  s.q.resize(N * H);
  s.k.resize(N * H);
  s.v.resize(N * H);
  s.ctx.resize(N * H);
  s.proj.resize(N * H);
  s.ff.resize(N * I);
  if (c.swiglu) s.gate.resize(N * I);
  float* x = s.x.data();
  float* proj = s.proj.data();
  float* ff = s.ff.data();

  // x[t] = LN((word[id] + type[types[t]]) + position[offset + p]), in HF's order of additions.
  std::vector<int32_t> position(N);
  for (int64_t i = 0; i < n_seq; i++)
    for (int32_t p = 0; p < lengths[i]; p++) position[starts[i] + p] = static_cast<int32_t>(c.position_offset + p);
  ForRows(pool, N, H, [&](int64_t t0, int64_t t1) {
    std::vector<float> sum(H), pos(H);
    for (int64_t t = t0; t < t1; t++) {
      ReadRow(*word_, ids[t], sum.data());
      const float* type = &types_[(types ? types[t] : 0) * H];
      if (position_) {
        ReadRow(*position_, position[t], pos.data());
        for (int64_t j = 0; j < H; j++) sum[j] = (sum[j] + type[j]) + pos[j];
      } else {
        for (int64_t j = 0; j < H; j++) sum[j] += type[j];
      }
      kernels::layernorm(sum.data(), emb_ln_g_.data(), emb_ln_b_.data(), x + t * H, H, c.eps);
    }
  });

  // y[t] = LN(proj[t] + x[t]) written back to x (proj holds the product plus its bias): the
  // post-LN residual of both blocks. `next` (may be null) quantizes each row as it is written.
  auto residual_norm = [&](const std::vector<float>& g, const std::vector<float>& b, Input* next) {
    ForRows(pool, N, H, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; t++) {
        float* p = proj + t * H;
        const float* r = x + t * H;
        for (int64_t j = 0; j < H; j++) p[j] += r[j];
        kernels::layernorm(p, g.data(), b.data(), x + t * H, H, c.eps);
        if (next) next->Rows(t, t + 1);
      }
    });
  };

  // Each layer input lives from the loop that writes it to the products that read it; one
  // QuantBuffers serves them all, as each is quantized after the previous one was last read.
  Input xin(x, N, H, s.quantized);  // layer 0's: quantized on first use
  for (size_t l = 0; l < layers_.size(); l++) {
    const Layer& L = layers_[l];
    ThrowIfAborted(abort);
    // q, k, v [N, H] = x·Wᵀ + b
    Product(pool, L.wq, xin, N, L.bq, s.q.data());
    Product(pool, L.wk, xin, N, L.bk, s.k.data());
    Product(pool, L.wv, xin, N, L.bv, s.v.data());
    if (c.rotary) {
      // Each head's halves (x₀, x₁) -> (x₀·cos − x₁·sin, x₀·sin + x₁·cos) at the token's position.
      const int64_t hd = c.head_dim(), half = hd / 2;
      ForRows(pool, N, 2 * H, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; t++) {
          const float* cs = &rope_cos_[position[t] * half];
          const float* sn = &rope_sin_[position[t] * half];
          for (float* row : {s.q.data() + t * H, s.k.data() + t * H})
            for (int64_t h = 0; h < c.heads; h++) {
              float* x0 = row + h * hd;
              float* x1 = x0 + half;
              for (int64_t i = 0; i < half; i++) {
                const float a = x0[i], b = x1[i];
                x0[i] = a * cs[i] - b * sn[i];
                x1[i] = a * sn[i] + b * cs[i];
              }
            }
        }
      });
    }

    Attention(s.q.data(), s.k.data(), s.v.data(), s.ctx.data(), starts.data(), lengths, n_seq);

    // x = LN(x + ctx·Woᵀ + bo)
    Input ctx_in(s.ctx.data(), N, H, s.quantized);
    Product(pool, L.wo, ctx_in, N, L.bo, proj);
    Input ffn_in(x, N, H, s.quantized);
    residual_norm(L.ln1_g, L.ln1_b, ffn_in.FuseFor(L.w1));

    // x = LN(x + gelu(x·W1ᵀ + b1)·W2ᵀ + b2)
    Product(pool, L.w1, ffn_in, N, L.b1, ff);
    if (c.swiglu) Product(pool, L.wg, ffn_in, N, zero_i_, s.gate.data());
    Input down_in(ff, N, I, s.quantized);
    Input* down_rows = down_in.FuseFor(L.w2);
    ForRows(pool, N, I, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; t++) {
        float* f = ff + t * I;
        if (c.swiglu) {
          const float* g = s.gate.data() + t * I;
          for (int64_t j = 0; j < I; j++) f[j] *= g[j] / (1.0f + std::exp(-g[j]));
        } else if (c.gelu_tanh)
          kernels::gelu_tanh(f, I);
        else
          kernels::gelu_erf(f, I);
        if (down_rows) down_rows->Rows(t, t + 1);
      }
    });
    Product(pool, L.w2, down_in, N, L.b2, proj);
    Input next_x(x, N, H, s.quantized);
    residual_norm(L.ln2_g, L.ln2_b, l + 1 < layers_.size() ? next_x.FuseFor(layers_[l + 1].wq) : nullptr);
    xin = next_x;
  }
  ThrowIfAborted(abort);
}

void Model::Encode(const int32_t* ids, const int32_t* lengths, int64_t n_seq, Pooling pooling, bool normalize,
                   float* out, const std::atomic<bool>& abort) const {
  const int64_t H = config_.hidden;
  Lease lease{this, TakeScratch()};
  std::vector<int64_t> starts;
  Layers(ids, nullptr, lengths, n_seq, *lease.scratch, starts, abort);
  const float* x = lease.scratch->x.data();

  // Pooling, then e / max(‖e‖₂, 1e-12). Sums in double: the order of rows cannot matter.
  std::vector<double> acc(H);
  for (int64_t i = 0; i < n_seq; i++) {
    const float* h = x + starts[i] * H;  // [T, H] rows of this sequence
    const int64_t T = lengths[i];
    float* e = out + i * H;
    switch (pooling) {
      case Pooling::Mean:
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t t = 0; t < T; t++)
          for (int64_t j = 0; j < H; j++) acc[j] += h[t * H + j];
        for (int64_t j = 0; j < H; j++) e[j] = static_cast<float>(acc[j] / static_cast<double>(T));
        break;
      case Pooling::Cls:
        std::memcpy(e, h, H * sizeof(float));
        break;
      case Pooling::Max:
        std::memcpy(e, h, H * sizeof(float));
        for (int64_t t = 1; t < T; t++)
          for (int64_t j = 0; j < H; j++) e[j] = std::max(e[j], h[t * H + j]);
        break;
    }
    if (normalize) {
      double sq = 0;
      for (int64_t j = 0; j < H; j++) sq += static_cast<double>(e[j]) * e[j];
      const double norm = std::max(std::sqrt(sq), 1e-12);
      for (int64_t j = 0; j < H; j++) e[j] = static_cast<float>(e[j] / norm);
    }
  }
}

void Model::Classify(const int32_t* ids, const int32_t* types, const int32_t* lengths, int64_t n_seq, float* out,
                     const std::atomic<bool>& abort) const {
  const Config& c = config_;
  if (c.labels == 0) throw SpecError("CONFIG_MISMATCH", "this BERT model has no classification head");
  const int64_t H = c.hidden, L = c.labels;
  Lease lease{this, TakeScratch()};
  std::vector<int64_t> starts;
  Layers(ids, types, lengths, n_seq, *lease.scratch, starts, abort);
  const float* x = lease.scratch->x.data();
  // One [CLS] row per sequence through two small products: dot products in double, so the
  // head adds no rounding of its own beyond the final float.
  ForRows(*pool_, n_seq, H * (H + L), [&](int64_t i0, int64_t i1) {
    std::vector<float> pooled(H);
    for (int64_t i = i0; i < i1; i++) {
      const float* h = x + starts[i] * H;
      const float* in = h;
      if (c.pooler) {
        for (int64_t o = 0; o < H; o++) {
          const float* w = &pooler_w_[o * H];
          double acc = pooler_b_[o];
          for (int64_t j = 0; j < H; j++) acc += static_cast<double>(w[j]) * h[j];
          pooled[o] = static_cast<float>(std::tanh(acc));
        }
        in = pooled.data();
      }
      for (int64_t o = 0; o < L; o++) {
        const float* w = &cls_w_[o * H];
        double acc = cls_b_[o];
        for (int64_t j = 0; j < H; j++) acc += static_cast<double>(w[j]) * in[j];
        out[i * L + o] = static_cast<float>(acc);
      }
    }
  });
}

}  // namespace bert
}  // namespace weightmap
