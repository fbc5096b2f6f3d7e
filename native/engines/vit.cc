#include "engines/vit.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engines/block_ops.h"
#include "kernels/kernels.h"
#include "threadpool.h"

namespace weightmap {
namespace engines {

namespace {

std::vector<float> ToFloat(const uint16_t* x, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  HalfToFloat(x, y.data(), n);
  return y;
}

// y [m, n] += bias, then GELU (tanh form) when `gelu`; rows split across the pool (a single thread
// made this a tenth of an encode while the other core waited).
void BiasRows(ThreadPool& pool, float* y, const float* bias, int64_t m, int64_t n, bool gelu) {
  pool.ParallelFor(m, 16, [&](int64_t r0, int64_t r1) {
    AddBiasRows(y + r0 * n, bias, r1 - r0, n);
    if (gelu) kernels::gelu_tanh(y + r0 * n, (r1 - r0) * n);
  });
}

// x [m, n] += y [m, n], rows split across the pool.
void AddRows(ThreadPool& pool, float* x, const float* y, int64_t m, int64_t n) {
  pool.ParallelFor(m, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0 * n; i < r1 * n; i++) x[i] += y[i];
  });
}

}  // namespace

std::shared_ptr<VitModel> VitModel::Load(const VitConfig& c, std::shared_ptr<const WeightsSpec> spec, int threads) {
  const WeightsSpec& s = *spec;  // tensor names by role: lib/architectures/moondream MOONDREAM_TENSOR_ROLES
  const int64_t D = c.dim, f = c.ffn, P = c.proj_hidden, pin = 3 * c.patch * c.patch;
  VitWeightsHalf w;
  w.patch_w = s.RequireF16(s.Name("patchEmb.weight"), {pin, D});
  w.patch_b = s.RequireF16(s.Name("patchEmb.bias"), {D});
  w.pos = s.RequireF16(s.Name("posEmb"), {1, c.n_patches, D});
  for (int64_t l = 0; l < c.n_layers; l++) {
    VitLayerHalf L;
    L.ln1_w = s.RequireF16(s.Name("visLn1.weight", l), {D});
    L.ln1_b = s.RequireF16(s.Name("visLn1.bias", l), {D});
    L.qkv_w = s.RequireF16(s.Name("visQkv.weight", l), {D, 3 * D});
    L.qkv_b = s.RequireF16(s.Name("visQkv.bias", l), {3 * D});
    L.proj_w = s.RequireF16(s.Name("visProj.weight", l), {D, D});
    L.proj_b = s.RequireF16(s.Name("visProj.bias", l), {D});
    L.ln2_w = s.RequireF16(s.Name("visLn2.weight", l), {D});
    L.ln2_b = s.RequireF16(s.Name("visLn2.bias", l), {D});
    L.fc1_w = s.RequireF16(s.Name("visFc1.weight", l), {D, f});
    L.fc1_b = s.RequireF16(s.Name("visFc1.bias", l), {f});
    L.fc2_w = s.RequireF16(s.Name("visFc2.weight", l), {f, D});
    L.fc2_b = s.RequireF16(s.Name("visFc2.bias", l), {D});
    w.layers.push_back(L);
  }
  w.post_ln_w = s.RequireF16(s.Name("visPostLn.weight"), {D});
  w.post_ln_b = s.RequireF16(s.Name("visPostLn.bias"), {D});
  w.proj1_w = s.RequireF16(s.Name("projFc1.weight"), {2 * D, P});
  w.proj1_b = s.RequireF16(s.Name("projFc1.bias"), {P});
  w.proj2_w = s.RequireF16(s.Name("projFc2.weight"), {P, c.text_dim});
  w.proj2_b = s.RequireF16(s.Name("projFc2.bias"), {c.text_dim});
  auto model = std::make_shared<VitModel>(c, w);
  model->spec_ = std::move(spec);
  model->pool_ = std::make_unique<ThreadPool>(threads);
  return model;
}

VitModel::VitModel(const VitConfig& config, const VitWeightsHalf& weights) : config_(config), half_(weights) {
  const VitConfig& c = config;
  const int64_t D = c.dim;
  if (c.n_heads * c.head_dim != D) throw SpecError("CONFIG_MISMATCH", "vision n_heads * head_dim must equal dim");
  if (c.patch <= 0 || c.image_size % c.patch != 0) throw SpecError("CONFIG_MISMATCH", "image_size must be a multiple of patch_size");
  const int64_t grid = c.image_size / c.patch;
  if (grid * grid != c.n_patches) throw SpecError("CONFIG_MISMATCH", "n_patches must be (image_size / patch_size)^2");
  layers_.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; l++) {
    const VitLayerHalf& w = weights.layers[l];
    LayerVectors& v = layers_[l];
    v.ln1_w = ToFloat(w.ln1_w, D);
    v.ln1_b = ToFloat(w.ln1_b, D);
    v.qkv_b = ToFloat(w.qkv_b, 3 * D);
    v.proj_b = ToFloat(w.proj_b, D);
    v.ln2_w = ToFloat(w.ln2_w, D);
    v.ln2_b = ToFloat(w.ln2_b, D);
    v.fc1_b = ToFloat(w.fc1_b, c.ffn);
    v.fc2_b = ToFloat(w.fc2_b, D);
  }
  patch_b_ = ToFloat(weights.patch_b, D);
  pos_ = ToFloat(weights.pos, c.n_patches * D);
  post_ln_w_ = ToFloat(weights.post_ln_w, D);
  post_ln_b_ = ToFloat(weights.post_ln_b, D);
  proj1_b_ = ToFloat(weights.proj1_b, c.proj_hidden);
  proj2_b_ = ToFloat(weights.proj2_b, c.text_dim);
}

void VitModel::Encode(const uint8_t* rgb, float* features, float* embeddings, const std::atomic<bool>& abort) const {
  const VitConfig& c = config_;
  const int64_t D = c.dim, N = c.n_patches, p = c.patch, S = c.image_size, grid = S / p, pin = 3 * p * p;
  ThreadPool& pool = *pool_;

  // patches [N, 3·p·p]: patch (gy, gx) row-major, element (ch, py, px), pixels (v/255 − 0.5)/0.5.
  std::vector<float> patches(static_cast<size_t>(N * pin));
  for (int64_t gy = 0; gy < grid; gy++)
    for (int64_t gx = 0; gx < grid; gx++) {
      float* out = patches.data() + (gy * grid + gx) * pin;
      for (int64_t ch = 0; ch < 3; ch++)
        for (int64_t py = 0; py < p; py++)
          for (int64_t px = 0; px < p; px++) {
            const uint8_t v = rgb[((gy * p + py) * S + gx * p + px) * 3 + ch];
            out[(ch * p + py) * p + px] = (static_cast<float>(v) / 255.0f - 0.5f) / 0.5f;
          }
    }

  std::vector<float> x(static_cast<size_t>(N * D)), y(x.size()), att(x.size()), tmp(x.size());
  std::vector<float> qkv(static_cast<size_t>(N * 3 * D)), hidden(static_cast<size_t>(N * c.ffn));
  MatmulF16(pool, patches.data(), half_.patch_w, x.data(), N, pin, D);
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < D; j++) x[i * D + j] += patch_b_[j] + pos_[i * D + j];

  // Pre-LN blocks, attention without a mask (every patch sees every patch).
  AttentionShape shape{N, 0, N, c.n_heads, c.head_dim, 3 * D, 3 * D, N, 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
  for (int64_t l = 0; l < c.n_layers; l++) {
    ThrowIfAborted(abort);
    const VitLayerHalf& w = half_.layers[l];
    const LayerVectors& v = layers_[l];
    LayerNormRows(x.data(), v.ln1_w.data(), v.ln1_b.data(), y.data(), N, D, c.eps);
    MatmulF16(pool, y.data(), w.qkv_w, qkv.data(), N, D, 3 * D);
    BiasRows(pool, qkv.data(), v.qkv_b.data(), N, 3 * D, false);
    Attention(pool, shape, qkv.data(), qkv.data() + D, qkv.data() + 2 * D, att.data());
    MatmulF16(pool, att.data(), w.proj_w, tmp.data(), N, D, D);
    BiasRows(pool, tmp.data(), v.proj_b.data(), N, D, false);
    AddRows(pool, x.data(), tmp.data(), N, D);

    LayerNormRows(x.data(), v.ln2_w.data(), v.ln2_b.data(), y.data(), N, D, c.eps);
    MatmulF16(pool, y.data(), w.fc1_w, hidden.data(), N, D, c.ffn);
    BiasRows(pool, hidden.data(), v.fc1_b.data(), N, c.ffn, true);
    MatmulF16(pool, hidden.data(), w.fc2_w, tmp.data(), N, c.ffn, D);
    BiasRows(pool, tmp.data(), v.fc2_b.data(), N, D, false);
    AddRows(pool, x.data(), tmp.data(), N, D);
  }
  ThrowIfAborted(abort);

  // F = LN(x); the projection reads [F | F] [N, 2D].
  std::vector<float> cat(static_cast<size_t>(N * 2 * D));
  for (int64_t i = 0; i < N; i++) {
    float* row = cat.data() + i * 2 * D;
    kernels::layernorm(x.data() + i * D, post_ln_w_.data(), post_ln_b_.data(), row, D, c.eps);
    std::memcpy(row + D, row, sizeof(float) * D);
    if (features) std::memcpy(features + i * D, row, sizeof(float) * D);
  }
  if (!embeddings) return;
  std::vector<float> ph(static_cast<size_t>(N * c.proj_hidden));
  MatmulF16(pool, cat.data(), half_.proj1_w, ph.data(), N, 2 * D, c.proj_hidden);
  BiasRows(pool, ph.data(), proj1_b_.data(), N, c.proj_hidden, true);
  MatmulF16(pool, ph.data(), half_.proj2_w, embeddings, N, c.proj_hidden, c.text_dim);
  BiasRows(pool, embeddings, proj2_b_.data(), N, c.text_dim, false);
}

}  // namespace engines
}  // namespace weightmap
