#include "engines/vit.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engines/block_ops.h"
#include "kernels/kernels.h"
#include "threadpool.h"

namespace weightmap {
namespace engines {

namespace {

// y [m, n] += bias, then the activation when `act` is set; rows split across the pool (a single
// thread made this a tenth of an encode while the other core waited).
void BiasRows(ThreadPool& pool, float* y, const float* bias, int64_t m, int64_t n, const VitActivation* act = nullptr) {
  pool.ParallelFor(m, 16, [&](int64_t r0, int64_t r1) {
    float* rows = y + r0 * n;
    const int64_t count = (r1 - r0) * n;
    AddBiasRows(rows, bias, r1 - r0, n);
    if (!act) return;
    switch (*act) {
      case VitActivation::GeluTanh: kernels::gelu_tanh(rows, count); break;
      case VitActivation::GeluErf: kernels::gelu_erf(rows, count); break;
      case VitActivation::GeluQuick:
        for (int64_t i = 0; i < count; i++) rows[i] = rows[i] / (1.0f + std::exp(-1.702f * rows[i]));
        break;
      case VitActivation::Silu:
        for (int64_t i = 0; i < count; i++) rows[i] = rows[i] / (1.0f + std::exp(-rows[i]));
        break;
    }
  });
}

// x [m, n] += y [m, n], rows split across the pool.
void AddRows(ThreadPool& pool, float* x, const float* y, int64_t m, int64_t n) {
  pool.ParallelFor(m, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0 * n; i < r1 * n; i++) x[i] += y[i];
  });
}

// A float tensor of exactly `shape`, flattened to f32.
std::vector<float> LoadFlat(const WeightsSpec& s, const std::string& name, const std::vector<int64_t>& shape,
                            decoder::LoadCost* cost) {
  const TensorRef& t = s.Require(name, shape);
  TensorRef flat = t;
  flat.shape = {1, t.numel};
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    throw SpecError("BAD_DTYPE", "tensor " + t.Describe() + " must be f32, f16 or bf16");
  std::vector<float> out(static_cast<size_t>(t.numel));
  decoder::DequantizeRow(flat, 0, out.data());
  cost->copied_bytes += t.numel * 4;
  return out;
}

}  // namespace

void VitConfig::Validate() const {
  auto fail = [](const std::string& what) { throw SpecError("CONFIG_MISMATCH", what); };
  if (dim <= 0 || n_layers <= 0 || n_heads <= 0 || head_dim <= 0 || ffn <= 0 || text_dim <= 0) fail("vision sizes must be positive");
  if (n_heads * head_dim != dim) fail("vision n_heads * head_dim must equal dim");
  if (patch <= 0 || image_size % patch != 0) fail("image_size must be a multiple of patch_size");
  if (grid() * grid() != n_patches) fail("n_patches must be (image_size / patch_size)^2");
  if (!(eps > 0)) fail("the vision layer norm epsilon must be positive");
  for (int ch = 0; ch < 3; ch++)
    if (!std::isfinite(mean[ch]) || !(std[ch] > 0) || !std::isfinite(std[ch])) fail("image mean and std must be finite, std > 0");
  if ((layout == VitLayout::MoonF16) != (projector == VitProjector::Moondream))
    fail("the Moondream projector comes with the MOON layout, and the GGUF layout with the mmproj projectors");
  if (projector == VitProjector::Moondream && proj_hidden <= 0) fail("the Moondream projector needs its hidden width");
  if (projector != VitProjector::Moondream && (merge < 1 || grid() % merge != 0))
    fail("the projector's merge factor (" + std::to_string(merge) + ") must divide the patch grid (" + std::to_string(grid()) + ")");
}

VitLinear VitLinear::InOut(const WeightsSpec& s, const std::string& name, int64_t in, int64_t out) {
  VitLinear l;
  l.in_ = in;
  l.out_ = out;
  const TensorRef& t = s.Require(name, {in, out});
  if (t.dtype == DType::F16) l.f16_ = s.RequireF16(name, {in, out});
  else if (t.dtype == DType::F32) l.f32_ = s.RequireF32(name, {in, out});
  else throw SpecError("BAD_DTYPE", "tensor " + t.Describe() + " ([in, out]) must be f16 or f32");
  return l;
}

VitLinear VitLinear::OutIn(const WeightsSpec& s, const std::string& name, int64_t in, int64_t out, decoder::LoadCost* cost,
                           ThreadPool& pool) {
  return OutInAs(s.Require(name, {out, in}), in, out, cost, pool);
}

VitLinear VitLinear::OutInAs(const TensorRef& t, int64_t in, int64_t out, decoder::LoadCost* cost, ThreadPool& pool) {
  if (t.numel != in * out) throw SpecError("SHAPE_MISMATCH", "tensor " + t.Describe() + " is not " + std::to_string(out) + "x" + std::to_string(in));
  TensorRef view = t;
  view.shape = {out, in};
  VitLinear l;
  l.in_ = in;
  l.out_ = out;
  l.out_in_ = true;
  l.m_ = decoder::Matrix::Prepare(view, decoder::WeightQuant::Keep, 32, cost, pool);
  return l;
}

void VitLinear::Apply(ThreadPool& pool, const float* x, float* y, int64_t m, std::vector<decoder::QuantizedInput>& scratch) const {
  if (f16_) {
    MatmulF16(pool, x, f16_, y, m, in_, out_);
  } else if (f32_) {
    MatmulF32(pool, x, f32_, y, m, in_, out_);
  } else {
    const decoder::LinearJob job{&m_, x, y};
    decoder::RunLinear(pool, &job, 1, m, scratch);
  }
}

VitModel::VitModel(const VitConfig& config, int threads) : config_(config), pool_(std::make_unique<ThreadPool>(threads)) {}

std::shared_ptr<VitModel> VitModel::Load(const VitConfig& c, std::shared_ptr<const WeightsSpec> spec, int threads) {
  c.Validate();
  std::shared_ptr<VitModel> model(new VitModel(c, threads));
  if (c.layout == VitLayout::MoonF16) model->LoadMoon(*spec);
  else model->LoadGguf(*spec);
  model->spec_ = std::move(spec);
  return model;
}

// Tensor names by role: lib/architectures/moondream MOONDREAM_TENSOR_ROLES.
void VitModel::LoadMoon(const WeightsSpec& s) {
  const VitConfig& c = config_;
  const int64_t D = c.dim, f = c.ffn, P = c.proj_hidden, pin = 3 * c.patch * c.patch;
  decoder::LoadCost* cost = &cost_;
  patch_ = VitLinear::InOut(s, s.Name("patchEmb.weight"), pin, D);
  patch_b_ = decoder::LoadVector(s, s.Name("patchEmb.bias"), D, cost);
  pos_ = LoadFlat(s, s.Name("posEmb"), {1, c.n_patches, D}, cost);
  layers_.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; l++) {
    VitLayer& L = layers_[l];
    L.ln1_w = decoder::LoadVector(s, s.Name("visLn1.weight", l), D, cost);
    L.ln1_b = decoder::LoadVector(s, s.Name("visLn1.bias", l), D, cost);
    L.qkv = VitLinear::InOut(s, s.Name("visQkv.weight", l), D, 3 * D);
    L.qkv_b = decoder::LoadVector(s, s.Name("visQkv.bias", l), 3 * D, cost);
    L.proj = VitLinear::InOut(s, s.Name("visProj.weight", l), D, D);
    L.proj_b = decoder::LoadVector(s, s.Name("visProj.bias", l), D, cost);
    L.ln2_w = decoder::LoadVector(s, s.Name("visLn2.weight", l), D, cost);
    L.ln2_b = decoder::LoadVector(s, s.Name("visLn2.bias", l), D, cost);
    L.fc1 = VitLinear::InOut(s, s.Name("visFc1.weight", l), D, f);
    L.fc1_b = decoder::LoadVector(s, s.Name("visFc1.bias", l), f, cost);
    L.fc2 = VitLinear::InOut(s, s.Name("visFc2.weight", l), f, D);
    L.fc2_b = decoder::LoadVector(s, s.Name("visFc2.bias", l), D, cost);
  }
  post_ln_w_ = decoder::LoadVector(s, s.Name("visPostLn.weight"), D, cost);
  post_ln_b_ = decoder::LoadVector(s, s.Name("visPostLn.bias"), D, cost);
  proj1_ = VitLinear::InOut(s, s.Name("projFc1.weight"), 2 * D, P);
  proj1_b_ = decoder::LoadVector(s, s.Name("projFc1.bias"), P, cost);
  proj2_ = VitLinear::InOut(s, s.Name("projFc2.weight"), P, c.text_dim);
  proj2_b_ = decoder::LoadVector(s, s.Name("projFc2.bias"), c.text_dim, cost);
}

// Tensor names by role: lib/architectures/clip CLIP_TENSOR_ROLES (llama.cpp's names).
void VitModel::LoadGguf(const WeightsSpec& s) {
  const VitConfig& c = config_;
  const int64_t D = c.dim, f = c.ffn, p = c.patch, d = c.text_dim;
  decoder::LoadCost* cost = &cost_;
  ThreadPool& pool = *pool_;
  // The conv kernel [D, 3, p, p]: row o is output channel o over (ch, py, px), the patch order.
  patch_ = VitLinear::OutInAs(s.Require(s.Name("patchEmb.weight"), {D, 3, p, p}), 3 * p * p, D, cost, pool);
  patch_b_ = decoder::LoadVector(s, s.Name("patchEmb.bias"), D, cost);
  pos_ = LoadFlat(s, s.Name("posEmb"), {c.n_patches, D}, cost);
  layers_.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; l++) {
    VitLayer& L = layers_[l];
    L.ln1_w = decoder::LoadVector(s, s.Name("visLn1.weight", l), D, cost);
    L.ln1_b = decoder::LoadVector(s, s.Name("visLn1.bias", l), D, cost);
    L.q = VitLinear::OutIn(s, s.Name("visQ.weight", l), D, D, cost, pool);
    L.k = VitLinear::OutIn(s, s.Name("visK.weight", l), D, D, cost, pool);
    L.v = VitLinear::OutIn(s, s.Name("visV.weight", l), D, D, cost, pool);
    L.qkv_b.reserve(static_cast<size_t>(3 * D));
    for (const char* role : {"visQ.bias", "visK.bias", "visV.bias"}) {
      const std::vector<float> b = decoder::LoadVector(s, s.Name(role, l), D, cost);
      L.qkv_b.insert(L.qkv_b.end(), b.begin(), b.end());
    }
    L.proj = VitLinear::OutIn(s, s.Name("visProj.weight", l), D, D, cost, pool);
    L.proj_b = decoder::LoadVector(s, s.Name("visProj.bias", l), D, cost);
    L.ln2_w = decoder::LoadVector(s, s.Name("visLn2.weight", l), D, cost);
    L.ln2_b = decoder::LoadVector(s, s.Name("visLn2.bias", l), D, cost);
    L.fc1 = VitLinear::OutIn(s, s.Name("visFc1.weight", l), D, f, cost, pool);
    L.fc1_b = decoder::LoadVector(s, s.Name("visFc1.bias", l), f, cost);
    L.fc2 = VitLinear::OutIn(s, s.Name("visFc2.weight", l), f, D, cost, pool);
    L.fc2_b = decoder::LoadVector(s, s.Name("visFc2.bias", l), D, cost);
  }
  post_ln_w_ = decoder::LoadVector(s, s.Name("visPostLn.weight"), D, cost);
  post_ln_b_ = decoder::LoadVector(s, s.Name("visPostLn.bias"), D, cost);
  if (c.projector == VitProjector::Gemma3) {
    soft_norm_ = decoder::LoadVector(s, s.Name("mmSoftEmbNorm"), D, cost);
    // HF's [vision, text] parameter as the converter wrote it: [in, out].
    proj1_ = VitLinear::InOut(s, s.Name("mmInputProjection"), D, d);
  } else {
    proj1_ = VitLinear::OutIn(s, s.Name("mmFc"), D * c.merge * c.merge, d, cost, pool);
  }
}

void VitModel::Encode(const uint8_t* rgb, float* features, float* embeddings, const std::atomic<bool>& abort) const {
  const VitConfig& c = config_;
  const int64_t D = c.dim, N = c.n_patches, p = c.patch, S = c.image_size, grid = c.grid(), pin = 3 * p * p;
  const bool fused = c.layout == VitLayout::MoonF16;
  ThreadPool& pool = *pool_;
  std::vector<decoder::QuantizedInput> scratch;

  // patches [N, 3·p·p]: patch (gy, gx) row-major, element (ch, py, px), pixels (v/255 − mean)/std.
  std::vector<float> patches(static_cast<size_t>(N * pin));
  for (int64_t gy = 0; gy < grid; gy++)
    for (int64_t gx = 0; gx < grid; gx++) {
      float* out = patches.data() + (gy * grid + gx) * pin;
      for (int64_t ch = 0; ch < 3; ch++)
        for (int64_t py = 0; py < p; py++)
          for (int64_t px = 0; px < p; px++) {
            const uint8_t v = rgb[((gy * p + py) * S + gx * p + px) * 3 + ch];
            out[(ch * p + py) * p + px] = (static_cast<float>(v) / 255.0f - c.mean[ch]) / c.std[ch];
          }
    }

  std::vector<float> x(static_cast<size_t>(N * D)), y(x.size()), att(x.size()), tmp(x.size());
  std::vector<float> qkv(static_cast<size_t>(N * 3 * D)), hidden(static_cast<size_t>(N * c.ffn));
  patch_.Apply(pool, patches.data(), x.data(), N, scratch);
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < D; j++) x[i * D + j] += patch_b_[j] + pos_[i * D + j];

  // Pre-LN blocks, attention without a mask (every patch sees every patch). Fused: q, k, v
  // interleaved per row [N, 3D]; separate: three blocks [N, D].
  const int64_t stride = fused ? 3 * D : D;
  float* q = qkv.data();
  float* k = fused ? q + D : q + N * D;
  float* v = fused ? q + 2 * D : q + 2 * N * D;
  const AttentionShape shape{N, 0, N, c.n_heads, c.head_dim, stride, stride, N, 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
  for (int64_t l = 0; l < c.n_layers; l++) {
    ThrowIfAborted(abort);
    const VitLayer& L = layers_[l];
    LayerNormRows(x.data(), L.ln1_w.data(), L.ln1_b.data(), y.data(), N, D, c.eps);
    if (fused) {
      L.qkv.Apply(pool, y.data(), qkv.data(), N, scratch);
      BiasRows(pool, qkv.data(), L.qkv_b.data(), N, 3 * D);
    } else {
      L.q.Apply(pool, y.data(), q, N, scratch);
      L.k.Apply(pool, y.data(), k, N, scratch);
      L.v.Apply(pool, y.data(), v, N, scratch);
      BiasRows(pool, q, L.qkv_b.data(), N, D);
      BiasRows(pool, k, L.qkv_b.data() + D, N, D);
      BiasRows(pool, v, L.qkv_b.data() + 2 * D, N, D);
    }
    Attention(pool, shape, q, k, v, att.data());
    L.proj.Apply(pool, att.data(), tmp.data(), N, scratch);
    BiasRows(pool, tmp.data(), L.proj_b.data(), N, D);
    AddRows(pool, x.data(), tmp.data(), N, D);

    LayerNormRows(x.data(), L.ln2_w.data(), L.ln2_b.data(), y.data(), N, D, c.eps);
    L.fc1.Apply(pool, y.data(), hidden.data(), N, scratch);
    BiasRows(pool, hidden.data(), L.fc1_b.data(), N, c.ffn, &c.activation);
    L.fc2.Apply(pool, hidden.data(), tmp.data(), N, scratch);
    BiasRows(pool, tmp.data(), L.fc2_b.data(), N, D);
    AddRows(pool, x.data(), tmp.data(), N, D);
  }
  ThrowIfAborted(abort);

  // F = post-LN(x), into y.
  LayerNormRows(x.data(), post_ln_w_.data(), post_ln_b_.data(), y.data(), N, D, c.eps);
  if (features) std::memcpy(features, y.data(), sizeof(float) * N * D);
  if (embeddings) Project(y.data(), embeddings, scratch);
}

void VitModel::Project(const float* F, float* embeddings, std::vector<decoder::QuantizedInput>& scratch) const {
  const VitConfig& c = config_;
  const int64_t D = c.dim, N = c.n_patches, grid = c.grid(), m = c.merge, T = c.n_tokens();
  ThreadPool& pool = *pool_;
  switch (c.projector) {
    case VitProjector::Moondream: {
      // gelu([F | F]·W1 + b1)·W2 + b2
      std::vector<float> cat(static_cast<size_t>(N * 2 * D));
      for (int64_t i = 0; i < N; i++) {
        std::memcpy(cat.data() + i * 2 * D, F + i * D, sizeof(float) * D);
        std::memcpy(cat.data() + i * 2 * D + D, F + i * D, sizeof(float) * D);
      }
      const VitActivation gelu = VitActivation::GeluTanh;
      std::vector<float> ph(static_cast<size_t>(N * c.proj_hidden));
      proj1_.Apply(pool, cat.data(), ph.data(), N, scratch);
      BiasRows(pool, ph.data(), proj1_b_.data(), N, c.proj_hidden, &gelu);
      proj2_.Apply(pool, ph.data(), embeddings, N, scratch);
      BiasRows(pool, embeddings, proj2_b_.data(), N, c.text_dim);
      return;
    }
    case VitProjector::Gemma3: {
      // Token (ty, tx) of the (grid/m)² grid: the mean of its m×m patches, then RMS norm × w.
      const int64_t side = grid / m;
      std::vector<float> pooled(static_cast<size_t>(T * D), 0.0f);
      const float inv = 1.0f / static_cast<float>(m * m);
      for (int64_t ty = 0; ty < side; ty++)
        for (int64_t tx = 0; tx < side; tx++) {
          float* out = pooled.data() + (ty * side + tx) * D;
          for (int64_t dy = 0; dy < m; dy++)
            for (int64_t dx = 0; dx < m; dx++) {
              const float* in = F + ((ty * m + dy) * grid + tx * m + dx) * D;
              for (int64_t j = 0; j < D; j++) out[j] += in[j];
            }
          for (int64_t j = 0; j < D; j++) out[j] *= inv;
          kernels::rmsnorm(out, soft_norm_.data(), out, D, c.eps);
        }
      proj1_.Apply(pool, pooled.data(), embeddings, T, scratch);
      return;
    }
    case VitProjector::Idefics3: {
      // Token (ty, tx): the m×m patches (ty·m + j, tx·m + i) concatenated, j outer, i inner.
      const int64_t side = grid / m;
      std::vector<float> shuffled(static_cast<size_t>(T * D * m * m));
      for (int64_t ty = 0; ty < side; ty++)
        for (int64_t tx = 0; tx < side; tx++) {
          float* out = shuffled.data() + (ty * side + tx) * D * m * m;
          for (int64_t j = 0; j < m; j++)
            for (int64_t i = 0; i < m; i++)
              std::memcpy(out + (j * m + i) * D, F + ((ty * m + j) * grid + tx * m + i) * D, sizeof(float) * D);
        }
      proj1_.Apply(pool, shuffled.data(), embeddings, T, scratch);
      return;
    }
  }
}

}  // namespace engines
}  // namespace weightmap
