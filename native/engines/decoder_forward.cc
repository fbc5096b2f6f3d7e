// The forward pass of one batch of tokens (prefill: the prompt as one batch, decode: n = 1), in
// llama2.c's style: one function, every buffer's shape beside it.
#include <cmath>
#include <cstring>

#include "engines/decoder.h"
#include "kernels/kernels.h"

namespace weightmap {
namespace decoder {

namespace {

// Runs fn(row0, row1) over rows [0, n): in the pool when the batch is large enough to pay for
// the dispatch (elementwise work of `width` per row), else inline.
template <typename Fn>
void ForRows(ThreadPool& pool, int64_t n, int64_t width, const Fn& fn) {
  if (n == 1 || n * width < (1 << 15)) {
    fn(int64_t{0}, n);
  } else {
    pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) { fn(b, e); });
  }
}

}  // namespace

DecoderSession::DecoderSession(std::shared_ptr<const DecoderModel> model, int64_t context_length, KvType kv)
    : model_(std::move(model)), cfg_(model_->config()), context_(context_length), kv_(kv) {
  if (context_ <= 0 || context_ > cfg_.max_seq_len)
    throw EngineError("ERR_OUT_OF_RANGE", "contextLength " + std::to_string(context_) + " outside [1, " +
                                              std::to_string(cfg_.max_seq_len) + "]");
  const int64_t rows = (model_->end_layer() - model_->first_layer()) * cfg_.n_kv_heads * context_;
  const size_t elements = static_cast<size_t>(rows * cfg_.head_dim);
  k_cache_.reset(new uint8_t[elements * static_cast<size_t>(KvElementBytes())]);
  v_cache_.reset(new uint8_t[elements * static_cast<size_t>(KvElementBytes())]);
  if (kv_ == KvType::Q8_0) {
    const size_t scales = static_cast<size_t>(rows * (cfg_.head_dim / KvGroup()));
    k_scales_.reset(new float[scales]);
    v_scales_.reset(new float[scales]);
  }
}

void DecoderSession::Truncate(int64_t n) {
  if (n < 0 || n > position_) throw EngineError("ERR_OUT_OF_RANGE", "truncate(" + std::to_string(n) + ") outside [0, " +
                                                                        std::to_string(position()) + "]");
  position_ = n;
  if (model_->embeds()) tokens_.resize(n);
}

void DecoderSession::EnsureScratch(int64_t n) {
  if (n <= capacity_) return;
  const DecoderConfig& c = cfg_;
  x_.resize(n * c.dim);
  xb_.resize(n * c.dim);
  q_.resize(n * c.q_dim());
  k_.resize(n * c.kv_dim());
  v_.resize(n * c.kv_dim());
  att_.resize(n * c.q_dim());
  proj_.resize(n * c.dim);
  gate_.resize(n * c.intermediate);
  up_.resize(n * c.intermediate);
  rope_.resize(n * c.head_dim);
  if (c.theta_local > 0) rope_local_.resize(n * c.head_dim);
  capacity_ = n;
}

void DecoderSession::Eval(const int32_t* ids, int64_t n, bool all_logits, float* logits, const std::atomic<bool>& abort) {
  if (!model_->embeds())
    throw EngineError("ERR_OUT_OF_RANGE", "this model starts at layer " + std::to_string(model_->first_layer()) +
                                              ": it takes hidden states, not token ids");
  Run(ids, nullptr, n, all_logits, logits, abort);
}

void DecoderSession::EvalHidden(const float* hidden, int64_t n, bool all_logits, float* out,
                                const std::atomic<bool>& abort) {
  if (model_->embeds()) throw EngineError("ERR_OUT_OF_RANGE", "this model starts at layer 0: it takes token ids");
  Run(nullptr, hidden, n, all_logits, out, abort);
}

void DecoderSession::Run(const int32_t* ids, const float* hidden, int64_t n, bool all_logits, float* out,
                         const std::atomic<bool>& abort) {
  if (n <= 0) throw EngineError("ERR_OUT_OF_RANGE", "eval needs at least one token");
  const int64_t start = position_.load();
  if (n > context_ - start)
    throw EngineError("ERR_OUT_OF_RANGE", "the session holds " + std::to_string(start) + " of " +
                                              std::to_string(context_) + " positions; " + std::to_string(n) +
                                              " more do not fit");
  for (int64_t i = 0; ids && i < n; i++)
    if (ids[i] < 0 || ids[i] >= cfg_.vocab)
      throw EngineError("ERR_OUT_OF_RANGE", "token id " + std::to_string(ids[i]) + " at index " + std::to_string(i) +
                                                " is outside the vocabulary [0, " + std::to_string(cfg_.vocab) + ")");
  // Without a head every position's hidden state is the output.
  const bool all = all_logits || !model_->has_head();
  const int64_t width = model_->has_head() ? cfg_.vocab : cfg_.dim;
  for (int64_t done = 0; done < n;) {
    const int64_t batch = std::min(kMaxBatch, n - done);
    const bool last = done + batch == n;
    const int32_t* batch_ids = ids ? ids + done : nullptr;
    const float* batch_hidden = hidden ? hidden + done * cfg_.dim : nullptr;
    if (all)
      Forward(batch_ids, batch_hidden, batch, start + done, batch, out + done * width, abort);
    else
      Forward(batch_ids, batch_hidden, batch, start + done, last ? 1 : 0, out, abort);
    done += batch;
  }
  if (ids) tokens_.insert(tokens_.end(), ids, ids + n);
  position_.store(start + n);
}

void DecoderSession::Forward(const int32_t* ids, const float* states, int64_t n, int64_t pos0, int64_t logits_rows,
                             float* logits, const std::atomic<bool>& abort) {
  const DecoderModel& M = *model_;
  const DecoderConfig& c = cfg_;
  ThreadPool& pool = M.pool();
  const int64_t dim = c.dim, hd = c.head_dim, ffn = c.intermediate;
  EnsureScratch(n);
  float* x = x_.data();        // [n, dim]
  float* xb = xb_.data();      // [n, dim]
  float* q = q_.data();        // [n, q_dim]
  float* k = k_.data();        // [n, kv_dim]
  float* v = v_.data();        // [n, kv_dim]
  float* att = att_.data();    // [n, q_dim]
  float* proj = proj_.data();  // [n, dim]
  float* gate = gate_.data();  // [n, intermediate]
  float* up = up_.data();      // [n, intermediate]
  float* rope = rope_.data();  // [n, hd]: cos of the hd/2 pair angles, then their sin

  if (ids) {
    for (int64_t t = 0; t < n; t++) M.Embed(ids[t], x + t * dim);
    if (c.embed_scale != 1.0f)
      for (int64_t i = 0; i < n * dim; i++) x[i] *= c.embed_scale;
  } else {
    std::memcpy(x, states, n * dim * sizeof(float));
  }

  // rope [n, hd] (and rope_local_ for the sliding layers' base): the angles of positions pos0 + t.
  const engines::Rope rotary = RopeOf(c, c.theta);
  for (int64_t t = 0; t < n; t++) rotary.Angles(pos0 + t, rope + t * hd);
  if (c.theta_local > 0) {
    const engines::Rope local = RopeOf(c, c.theta_local);
    for (int64_t t = 0; t < n; t++) local.Angles(pos0 + t, rope_local_.data() + t * hd);
  }
  const float* layer_rope = rope;  // the table of the layer being run (its RoPE base)
  // Rotates one head vector h[hd] of token t.
  auto rotate = [&](float* h, int64_t t) { rotary.Rotate(h, layer_rope + t * hd); };

  for (int64_t l = M.first_layer(); l < M.end_layer(); l++) {
    if (abort.load(std::memory_order_relaxed)) throw EngineError("ABORT_ERR", "The operation was aborted");
    const DecoderLayer& L = M.layer(l);
    const int64_t cached = l - M.first_layer();  // this layer's slot in the KV cache
    layer_rope = c.LayerTheta(l) == c.theta ? rope : rope_local_.data();

    // Attention block: xb = rmsnorm(x); q, k, v = W·xb.
    ForRows(pool, n, dim, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; t++) kernels::rmsnorm(x + t * dim, L.attn_norm.data(), xb + t * dim, dim, c.eps);
    });
    const LinearJob qkv[3] = {{&L.wq, xb, q}, {&L.wk, xb, k}, {&L.wv, xb, v}};
    RunLinear(pool, qkv, 3, n, qin_);

    // Per head: biases (Qwen2), QK-norm (Qwen3), then RoPE; k and v go into the cache at their positions.
    ForRows(pool, n, c.q_dim() + c.kv_dim(), [&](int64_t t0, int64_t t1) {
      std::vector<float> head(hd);
      for (int64_t t = t0; t < t1; t++) {
        if (c.qkv_bias) {
          const kernels::KernelTable& kt = kernels::Active();
          kt.axpy_f32(1.0f, L.bq.data(), q + t * c.q_dim(), c.q_dim());
          kt.axpy_f32(1.0f, L.bk.data(), k + t * c.kv_dim(), c.kv_dim());
          kt.axpy_f32(1.0f, L.bv.data(), v + t * c.kv_dim(), c.kv_dim());
        }
        for (int64_t h = 0; h < c.n_heads; h++) {
          float* qh = q + t * c.q_dim() + h * hd;
          if (c.qk_norm) {
            std::memcpy(head.data(), qh, hd * sizeof(float));
            kernels::rmsnorm(head.data(), L.q_norm.data(), qh, hd, c.eps);
          }
          rotate(qh, t);
        }
        for (int64_t g = 0; g < c.n_kv_heads; g++) {
          float* kh = k + t * c.kv_dim() + g * hd;
          if (c.qk_norm) {
            std::memcpy(head.data(), kh, hd * sizeof(float));
            kernels::rmsnorm(head.data(), L.k_norm.data(), kh, hd, c.eps);
          }
          rotate(kh, t);
          StoreKv(cached, g, pos0 + t, kh, v + t * c.kv_dim() + g * hd);
        }
      }
    });

    Attention(cached, pos0, n);  // att [n, q_dim]

    // x += Wo·att (normed first with sandwich norms; xb is free until the FFN norm)
    const LinearJob o[1] = {{&L.wo, att, proj}};
    RunLinear(pool, o, 1, n, qin_);
    ForRows(pool, n, dim, [&](int64_t t0, int64_t t1) {
      AddBlockOutput(c, L.post_attn_norm, proj + t0 * dim, xb + t0 * dim, x + t0 * dim, t1 - t0);
    });

    // FFN block: x += W_down·(act(W_gate·xb) ⊙ W_up·xb), xb = rmsnorm(x); act silu or tanh GELU.
    ForRows(pool, n, dim, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; t++) kernels::rmsnorm(x + t * dim, L.ffn_norm.data(), xb + t * dim, dim, c.eps);
    });
    const LinearJob gate_up[2] = {{&L.w_gate, xb, gate}, {&L.w_up, xb, up}};
    RunLinear(pool, gate_up, 2, n, qin_);
    ForRows(pool, n, ffn, [&](int64_t t0, int64_t t1) {
      GatedActivation(c, gate + t0 * ffn, up + t0 * ffn, (t1 - t0) * ffn);
    });
    const LinearJob down[1] = {{&L.w_down, gate, proj}};
    RunLinear(pool, down, 1, n, qin_);
    ForRows(pool, n, dim, [&](int64_t t0, int64_t t1) {
      AddBlockOutput(c, L.post_ffn_norm, proj + t0 * dim, xb + t0 * dim, x + t0 * dim, t1 - t0);
    });
  }
  if (logits_rows == 0) return;
  if (abort.load(std::memory_order_relaxed)) throw EngineError("ABORT_ERR", "The operation was aborted");
  if (!M.has_head()) {  // a pipeline stage: the hidden states of the last logits_rows positions
    std::memcpy(logits, x + (n - logits_rows) * dim, logits_rows * dim * sizeof(float));
    return;
  }

  // logits [logits_rows, vocab] = Wcls · rmsnorm(x) of the last logits_rows positions.
  const int64_t first = n - logits_rows;
  for (int64_t t = first; t < n; t++)
    kernels::rmsnorm(x + t * dim, M.final_norm().data(), xb + (t - first) * dim, dim, c.eps);
  const LinearJob head[1] = {{&M.classifier(), xb, logits}};
  RunLinear(pool, head, 1, logits_rows, qin_);
}

}  // namespace decoder
}  // namespace weightmap
