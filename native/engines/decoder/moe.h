// The mixture-of-experts FFN (Qwen3-MoE; llama.cpp's build_moe_ffn with softmax gating): for each
// row, router logits [n_experts] → softmax → the top k experts → their probabilities, renormalized
// to sum 1 when norm_topk; the row's output is Σ_j w_j · down_j(silu(gate_j·x) ⊙ up_j·x) over its
// k experts. Only the chosen experts' matrices are read: rows are grouped by expert, so each active
// expert's weights are read once per pass for all its rows (a product of m rows, m its row count),
// and the products of experts with the same m run as one parallel region (a decode step: the k
// experts' gate/up in one region, their down in another).
#pragma once

#include <cstdint>
#include <vector>

#include "engines/decoder/linear.h"

namespace weightmap {

class ThreadPool;

namespace decoder {

// One layer's router and experts (every expert a view of its own rows of the mapping).
struct MoeWeights {
  Matrix router;              // [n_experts, dim]
  std::vector<Matrix> gate;   // [n_experts] of [expert_ffn, dim]
  std::vector<Matrix> up;     // [n_experts] of [expert_ffn, dim]
  std::vector<Matrix> down;   // [n_experts] of [dim, expert_ffn]
  // gpt-oss's biases (empty without them): router [n_experts], gate/up [n_experts, expert_ffn],
  // down [n_experts, dim].
  std::vector<float> router_b, gate_b, up_b, down_b;
};

// How a mixture routes and activates (DecoderConfig's expert fields).
struct MoeOptions {
  int64_t k = 0;              // experts per row
  // Softmax over every expert, the k weights renormalized to sum 1: also gpt-oss's routing
  // (llama.cpp's SOFTMAX_WEIGHT, a softmax over the k chosen logits alone, is the same weights).
  bool norm_topk = false;
  // > 0: gpt-oss's clamped SwiGLU (ggml's swiglu_oai, transformers' GptOssExperts):
  // g = min(gate, limit), u = clamp(up, ±limit), out = g · σ(1.702 g) · (u + 1). 0: silu(gate) · up.
  float swiglu_limit = 0;
};

// Scratch of MoeFfn over n rows with k experts each.
struct MoeScratch {
  std::vector<float> logits;    // [n, n_experts]
  std::vector<int32_t> chosen;  // [n, k] expert ids, ascending within a row
  std::vector<float> weight;    // [n, k] their weights
  std::vector<int64_t> slot;    // [n, k] the slot (row of xe/out) of each choice
  std::vector<float> xe;        // [n·k, dim] the rows' inputs grouped by expert
  std::vector<float> gate;      // [n·k, expert_ffn]
  std::vector<float> up;        // [n·k, expert_ffn]
  std::vector<float> out;       // [n·k, dim]
  std::vector<int64_t> count;   // [n_experts] rows per expert
  std::vector<int64_t> first;   // [n_experts] first slot per expert
  std::vector<LinearJob> jobs;

  void Reserve(int64_t n, int64_t n_experts, int64_t k, int64_t dim, int64_t ffn);
};

// The experts of one row: chosen[k] (ascending ids) and weight[k] from logits[n_experts]:
// softmax, the k largest (the lower id first among equal logits), renormalized when norm_topk
// (the sum clamped below at 2^-14, as llama.cpp does). probs: scratch [n_experts].
void Route(const float* logits, int64_t n_experts, const MoeOptions& o, int32_t* chosen, float* weight, float* probs);

// How MoeFfn runs its products: RunLinear (one session's rows as one batch) or RunLinearRows (each
// row its own one-token product: a batched step of several sessions, each row bitwise alone).
using LinearRunner = void (*)(ThreadPool&, const LinearJob*, int, int64_t, std::vector<QuantizedInput>&);

// out [n, dim] = the MoE FFN of xb [n, dim] (n_experts, k, expert_ffn as the weights say).
void MoeFfn(ThreadPool& pool, LinearRunner run, const MoeWeights& w, const MoeOptions& o, const float* xb, int64_t n,
            float* out, MoeScratch& s, std::vector<QuantizedInput>& qin);

}  // namespace decoder
}  // namespace weightmap
