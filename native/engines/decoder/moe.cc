// MoeFfn (moe.h): route, group the rows by expert, the experts' products, combine.
#include "engines/decoder/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kernels.h"
#include "threadpool.h"

namespace weightmap {
namespace decoder {

namespace {

// Elementwise work below which the gather, activation and combine stay on the calling thread.
constexpr int64_t kSerialWork = int64_t(1) << 15;

template <typename Fn>
void ForChunks(ThreadPool& pool, int64_t n, int64_t width, const Fn& fn) {
  if (n * width < kSerialWork) fn(int64_t{0}, n);
  else pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) { fn(b, e); });
}

}  // namespace

void MoeScratch::Reserve(int64_t n, int64_t n_experts, int64_t k, int64_t dim, int64_t ffn) {
  auto grow = [](auto& v, int64_t size) {
    if (static_cast<int64_t>(v.size()) < size) v.resize(size);
  };
  grow(logits, n * n_experts);
  grow(chosen, n * k);
  grow(weight, n * k);
  grow(slot, n * k);
  grow(xe, n * k * dim);
  grow(gate, n * k * ffn);
  grow(up, n * k * ffn);
  grow(out, n * k * dim);
  grow(count, n_experts);
  grow(first, n_experts);
}

void Route(const float* logits, int64_t n_experts, const MoeOptions& o, int32_t* chosen, float* weight, float* probs) {
  const int64_t k = o.k;
  // softmax over every expert (ggml_soft_max: max subtracted, f32 sums).
  float max = logits[0];
  for (int64_t e = 1; e < n_experts; e++) max = std::max(max, logits[e]);
  float sum = 0;
  for (int64_t e = 0; e < n_experts; e++) sum += probs[e] = std::exp(logits[e] - max);
  for (int64_t e = 0; e < n_experts; e++) probs[e] /= sum;
  // The k largest logits (softmax keeps their order), then in ascending id order, which fixes the
  // order in which a row's expert outputs are summed.
  for (int64_t j = 0; j < k; j++) {
    int32_t best = -1;
    for (int64_t e = 0; e < n_experts; e++) {
      bool taken = false;
      for (int64_t i = 0; i < j && !taken; i++) taken = chosen[i] == e;
      if (!taken && (best < 0 || logits[e] > logits[best])) best = static_cast<int32_t>(e);
    }
    chosen[j] = best;
  }
  std::sort(chosen, chosen + k);
  float total = 0;
  for (int64_t j = 0; j < k; j++) total += weight[j] = probs[chosen[j]];
  if (!o.norm_topk) return;
  total = std::max(total, 6.103515625e-5f);  // llama.cpp clamps the sum to f16's smallest normal
  for (int64_t j = 0; j < k; j++) weight[j] /= total;
}

void MoeFfn(ThreadPool& pool, LinearRunner run, const MoeWeights& w, const MoeOptions& o, const float* xb, int64_t n,
            float* out, MoeScratch& s, std::vector<QuantizedInput>& qin) {
  const int64_t k = o.k;
  const int64_t n_experts = w.router.rows(), dim = w.router.cols(), ffn = w.gate[0].rows();
  s.Reserve(n, n_experts, k, dim, ffn);

  // logits [n, n_experts] = router · xb; each row's k experts and weights.
  const LinearJob router[1] = {{&w.router, xb, s.logits.data()}};
  run(pool, router, 1, n, qin);
  const kernels::KernelTable& kt = kernels::Active();
  if (!w.router_b.empty())
    for (int64_t t = 0; t < n; t++) kt.axpy_f32(1.0f, w.router_b.data(), s.logits.data() + t * n_experts, n_experts);
  {
    std::vector<float> probs(n_experts);
    for (int64_t t = 0; t < n; t++)
      Route(s.logits.data() + t * n_experts, n_experts, o, s.chosen.data() + t * k, s.weight.data() + t * k,
            probs.data());
  }

  // Slots grouped by expert (ascending ids, each expert's rows in order): expert e owns slots
  // [first[e], first[e] + count[e]); xe holds each slot's input row.
  std::fill(s.count.begin(), s.count.begin() + n_experts, 0);
  for (int64_t i = 0; i < n * k; i++) s.count[s.chosen[i]]++;
  int64_t at = 0;
  for (int64_t e = 0; e < n_experts; e++) {
    s.first[e] = at;
    at += s.count[e];
  }
  {
    std::vector<int64_t> next(s.first.begin(), s.first.begin() + n_experts);
    for (int64_t t = 0; t < n; t++)
      for (int64_t j = 0; j < k; j++) s.slot[t * k + j] = next[s.chosen[t * k + j]]++;
  }
  ForChunks(pool, n, k * dim, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++)
      for (int64_t j = 0; j < k; j++) std::memcpy(s.xe.data() + s.slot[t * k + j] * dim, xb + t * dim, dim * sizeof(float));
  });

  // The products of the active experts, those with the same row count m as one call: fn(e) gives
  // expert e's jobs.
  std::vector<int64_t> sizes;
  for (int64_t e = 0; e < n_experts; e++)
    if (s.count[e] > 0) sizes.push_back(s.count[e]);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  auto products = [&](auto&& jobs_of) {
    for (int64_t m : sizes) {
      s.jobs.clear();
      for (int64_t e = 0; e < n_experts; e++)
        if (s.count[e] == m) jobs_of(e);
      run(pool, s.jobs.data(), static_cast<int>(s.jobs.size()), m, qin);
    }
  };
  float* gate = s.gate.data();  // [n·k, ffn]
  float* up = s.up.data();      // [n·k, ffn]
  float* y = s.out.data();      // [n·k, dim]
  products([&](int64_t e) {
    const float* x = s.xe.data() + s.first[e] * dim;
    s.jobs.push_back({&w.gate[e], x, gate + s.first[e] * ffn});
    s.jobs.push_back({&w.up[e], x, up + s.first[e] * ffn});
  });
  // expert_of[slot]: the expert whose rows the slot is in (for the biases).
  std::vector<int32_t> expert_of(w.gate_b.empty() ? 0 : n * k);
  for (int64_t e = 0; e < n_experts && !expert_of.empty(); e++)
    std::fill(expert_of.begin() + s.first[e], expert_of.begin() + s.first[e] + s.count[e], static_cast<int32_t>(e));
  ForChunks(pool, n * k, ffn, [&](int64_t i0, int64_t i1) {
    if (!expert_of.empty()) {
      for (int64_t i = i0; i < i1; i++) {
        kt.axpy_f32(1.0f, w.gate_b.data() + expert_of[i] * ffn, gate + i * ffn, ffn);
        kt.axpy_f32(1.0f, w.up_b.data() + expert_of[i] * ffn, up + i * ffn, ffn);
      }
    }
    if (o.swiglu_limit > 0) {
      // ggml_compute_forward_swiglu_oai_f32 (alpha 1.702, llama.cpp's and transformers' constant).
      constexpr float kAlpha = 1.702f;
      const float limit = o.swiglu_limit;
      for (int64_t i = i0 * ffn; i < i1 * ffn; i++) {
        const float g = std::min(gate[i], limit);
        const float u = std::clamp(up[i], -limit, limit);
        gate[i] = g / (1.0f + std::exp(kAlpha * (-g))) * (u + 1.0f);
      }
    } else {
      kernels::silu_mul(gate + i0 * ffn, up + i0 * ffn, gate + i0 * ffn, (i1 - i0) * ffn);
    }
  });
  products([&](int64_t e) { s.jobs.push_back({&w.down[e], gate + s.first[e] * ffn, y + s.first[e] * dim}); });
  if (!expert_of.empty())
    ForChunks(pool, n * k, dim, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) kt.axpy_f32(1.0f, w.down_b.data() + expert_of[i] * dim, y + i * dim, dim);
    });

  // out[t] = Σ_j weight[t, j] · y[slot[t, j]], in ascending expert order.
  ForChunks(pool, n, k * dim, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      float* o = out + t * dim;
      std::memset(o, 0, dim * sizeof(float));
      for (int64_t j = 0; j < k; j++) kt.axpy_f32(s.weight[t * k + j], y + s.slot[t * k + j] * dim, o, dim);
    }
  });
}

}  // namespace decoder
}  // namespace weightmap
