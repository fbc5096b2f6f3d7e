// The decoder's layers, written once, over rows that carry their own session and position
// (llama.cpp's ubatch): prefill is n rows of one session, a batched decode step one row per
// session, a pipeline stage the same pass over its layer range. A layer is named steps — Project
// (norm, q/k/v projections), AttentionInput (biases, QK-norm, RoPE, KV store), Attend,
// AttentionOutput, Ffn — so a new FFN (MoE) or a new attention detail is one function here.
//
// How the rows run, the one difference between one session and several:
//   one span (one session's consecutive positions): the linear layers as one batch (RunLinear),
//     elementwise steps and attention across the pool;
//   several spans of one row each (several sessions' one-token steps): every row its own one-token
//     product (RunLinearRows: each weight block read once for all rows, each row bitwise its
//     session's step alone), the spans' attention side by side across the pool, one session per thread;
//   several spans, some longer (PooledPass: several sequences from position 0): the linear layers as
//     one batch, the spans' attention side by side;
//   one span of steps (a speculative verification, Span::steps): each row as its own one-token
//     step, one after another (elementwise steps and attention row by row, float products too).
#pragma once

#include <atomic>
#include <cstdint>

#include "engines/decoder/decoder.h"

namespace weightmap {
namespace decoder {

// Rows [row0, row0 + n) of a pass: the tokens at positions [pos0, pos0 + n) of `session`.
struct Span {
  DecoderSession* session;
  int64_t row0;
  int64_t n;
  int64_t pos0;
  const std::atomic<bool>* abort;  // the call's abort flag (checked between layers)
  // The span's rows attend to each other (not only to earlier positions): Gemma 3's image tokens.
  bool bidirectional = false;
  // Each row bitwise its own one-token step (DecoderSession::Eval's `steps`): the products row by
  // row (RunLinearRows), each row's attention alone at its position.
  bool steps = false;
};

class DecoderPass {
 public:
  // spans[n_spans] cover rows [0, n) in order, each session once; `a` holds at least n rows.
  DecoderPass(const DecoderModel& model, const Span* spans, int64_t n_spans, Activations& a);

  // x = the embeddings of ids[n] (× embed_scale), or states [n, dim] (a stage past layer 0).
  void Embed(const int32_t* ids);
  void Input(const float* states);
  // The model's layers [first_layer, end_layer) over every row. Throws ABORT_ERR when every span's
  // abort flag is set at a layer's start.
  void Layers();
  // out [rows, vocab] = head(final_norm(x)) of the last `rows` rows, or (a model without the head)
  // their hidden states [rows, dim]. Throws ABORT_ERR as Layers does.
  void Output(int64_t rows, float* out);
  // out [count, dim] = final_norm(x) of rows[0..count) (the embedding models' output: no head).
  void Hidden(const int64_t* rows, int64_t count, float* out);

 private:
  void Layer(int64_t l);
  // xb = rmsnorm(x); q, k, v [n, ·] = W·xb.
  void Project(const DecoderLayer& L);
  // Rows [t0, t1) of span s: biases (Qwen2), QK-norm (Qwen3), RoPE of q and k; k and v into the
  // session's cache at the rows' positions.
  void AttentionInput(const DecoderLayer& L, int64_t cached, const Span& s, int64_t t0, int64_t t1);
  // att [n, q_dim]: AttentionInput of every row, then causal attention of each span against its
  // session's cache.
  void Attend(const DecoderLayer& L, int64_t cached);
  // x += Wo·att (normed first with sandwich norms).
  void AttentionOutput(const DecoderLayer& L);
  // x += FFN(xb) with xb = rmsnorm(x): the dense FFN, or the mixture of experts (moe.h).
  void Ffn(const DecoderLayer& L);
  // proj [n, dim] = W_down·(act(W_gate·xb) ⊙ W_up·xb); act silu or tanh GELU.
  void Dense(const DecoderLayer& L, const float* xb, float* proj);

  void Linear(const LinearJob* jobs, int n_jobs, int64_t m);
  // fn(t0, t1) over rows [0, n): for one span chunked across the pool when the rows are wide
  // enough to pay for the dispatch (elementwise work `width` per row), else in one call.
  template <typename Fn>
  void ForRows(int64_t width, const Fn& fn);
  bool Aborted() const;

  const DecoderModel& M_;
  const DecoderConfig& c_;
  ThreadPool& pool_;
  const engines::Rope rotary_;  // the pairing and factors (a layer's angles are its table: layer_rope_)
  const Span* spans_;
  int64_t n_spans_;
  int64_t n_;  // rows
  bool steps_;  // every row its own one-token step: several spans of one row each (a batched decode step), or one span of steps
  Activations& a_;
  const float* layer_rope_ = nullptr;  // the angle table of the layer being run (its RoPE base)
};

}  // namespace decoder
}  // namespace weightmap
