// DecoderPass (decoder/pass.h) in llama2.c's style: every buffer's shape beside it; a layer's steps
// in the order they run.
#include "engines/decoder/pass.h"

#include <vector>

#include <cstring>

#include "kernels/kernels.h"

namespace weightmap {
namespace decoder {

namespace {

// The steps that differ between decoder variants.
// gate [n] = act(gate) ⊙ up: silu (SwiGLU) or tanh GELU (GeGLU).
void GatedActivation(const DecoderConfig& c, float* gate, const float* up, int64_t n) {
  if (c.activation == Activation::Silu) {
    kernels::silu_mul(gate, up, gate, n);
    return;
  }
  kernels::gelu_tanh(gate, n);
  for (int64_t i = 0; i < n; i++) gate[i] *= up[i];
}

// x [rows, dim] += residual_scale · proj, or += rmsnorm(proj) · post_norm with sandwich norms (scratch [rows, dim]).
void AddBlockOutput(const DecoderConfig& c, const std::vector<float>& post_norm, const float* proj, float* scratch,
                    float* x, int64_t rows) {
  const int64_t dim = c.dim;
  if (c.sandwich_norms) {
    for (int64_t t = 0; t < rows; t++) kernels::rmsnorm(proj + t * dim, post_norm.data(), scratch + t * dim, dim, c.eps);
    proj = scratch;
  }
  kernels::Active().axpy_f32(c.residual_scale, proj, x, rows * dim);
}

}  // namespace

void Activations::Reserve(const DecoderConfig& c, int64_t n) {
  if (n <= capacity) return;
  x.resize(n * c.dim);
  xb.resize(n * c.dim);
  q.resize(n * c.q_dim());
  k.resize(n * c.kv_dim());
  v.resize(n * c.kv_dim());
  att.resize(n * c.q_dim());
  proj.resize(n * c.dim);
  if (!c.moe()) {
    gate.resize(n * c.intermediate);
    up.resize(n * c.intermediate);
  }
  rope.resize(n * c.head_dim);
  if (c.theta_local > 0) rope_local.resize(n * c.head_dim);
  capacity = n;
}

DecoderPass::DecoderPass(const DecoderModel& model, const Span* spans, int64_t n_spans, Activations& a)
    : M_(model), c_(model.config()), pool_(model.pool()), rotary_(RopeOf(c_, c_.theta)), spans_(spans),
      n_spans_(n_spans), n_(spans[n_spans - 1].row0 + spans[n_spans - 1].n), steps_((n_spans > 1 && n_ == n_spans) || (n_spans == 1 && spans[0].steps)),
      a_(a) {
  // rope [n, hd] (and rope_local for the sliding layers' base): the angles of each row's position.
  const int64_t hd = c_.head_dim;
  for (int64_t i = 0; i < n_spans_; i++)
    for (int64_t t = 0; t < spans_[i].n; t++) rotary_.Angles(spans_[i].pos0 + t, a_.rope.data() + (spans_[i].row0 + t) * hd);
  if (c_.theta_local > 0) {
    const engines::Rope local = RopeOf(c_, c_.theta_local);
    for (int64_t i = 0; i < n_spans_; i++)
      for (int64_t t = 0; t < spans_[i].n; t++)
        local.Angles(spans_[i].pos0 + t, a_.rope_local.data() + (spans_[i].row0 + t) * hd);
  }
}

template <typename Fn>
void DecoderPass::ForRows(int64_t width, const Fn& fn) {
  if (steps_ && n_spans_ == 1) {
    // Row by row: a vector loop over several rows would put a row's tail values in other lanes
    // (or in the scalar remainder) than its own step does.
    for (int64_t t = 0; t < n_; t++) fn(t, t + 1);
  } else if (steps_ || n_ == 1 || n_ * width < (1 << 15)) {
    fn(int64_t{0}, n_);
  } else {
    pool_.ParallelFor(n_, 1, [&](int64_t b, int64_t e) { fn(b, e); });
  }
}

void DecoderPass::Linear(const LinearJob* jobs, int n_jobs, int64_t m) {
  if (m > 1 && steps_ && n_spans_ == 1) {
    // A float matrix's columns may round with where the thread split puts them: its rows go
    // through the one-token product one at a time, as their steps would (float weights read m
    // times; the quantized ones once, RunLinearRows being bitwise per row).
    bool floats = false;
    for (int j = 0; j < n_jobs; j++) floats = floats || jobs[j].w->kind() == MatrixKind::F32 || jobs[j].w->kind() == MatrixKind::F16;
    if (floats) {
      std::vector<LinearJob> row(jobs, jobs + n_jobs);
      for (int64_t i = 0; i < m; i++) {
        for (int j = 0; j < n_jobs; j++) {
          row[j].x = jobs[j].x + i * jobs[j].w->cols();
          row[j].y = jobs[j].y + i * jobs[j].w->rows();
        }
        RunLinear(pool_, row.data(), n_jobs, 1, a_.qin);
      }
      return;
    }
  }
  if (steps_) RunLinearRows(pool_, jobs, n_jobs, m, a_.qin);
  else RunLinear(pool_, jobs, n_jobs, m, a_.qin);
}

bool DecoderPass::Aborted() const {
  for (int64_t i = 0; i < n_spans_; i++)
    if (!spans_[i].abort->load(std::memory_order_relaxed)) return false;
  return true;
}

void DecoderPass::Embed(const int32_t* ids) {
  const int64_t dim = c_.dim;
  float* x = a_.x.data();  // [n, dim]
  for (int64_t t = 0; t < n_; t++) M_.Embed(ids[t], x + t * dim);
  if (c_.embed_scale != 1.0f)
    for (int64_t i = 0; i < n_ * dim; i++) x[i] *= c_.embed_scale;
}

void DecoderPass::Input(const float* states) { std::memcpy(a_.x.data(), states, n_ * c_.dim * sizeof(float)); }

void DecoderPass::Layers() {
  for (int64_t l = M_.first_layer(); l < M_.end_layer(); l++) {
    if (Aborted()) throw EngineError("ABORT_ERR", "The operation was aborted");
    Layer(l);
  }
}

void DecoderPass::Layer(int64_t l) {
  const DecoderLayer& L = M_.layer(l);
  const int64_t cached = l - M_.first_layer();  // this layer's slot in the KV caches
  // The angles of this layer's RoPE base, or none for a layer without RoPE.
  layer_rope_ = !c_.Rotates(l) ? nullptr : c_.LayerTheta(l) == c_.theta ? a_.rope.data() : a_.rope_local.data();
  Project(L);
  Attend(L, cached);
  AttentionOutput(L);
  Ffn(L);
}

void DecoderPass::Project(const DecoderLayer& L) {
  const int64_t dim = c_.dim;
  const float* x = a_.x.data();  // [n, dim]
  float* xb = a_.xb.data();      // [n, dim]
  ForRows(dim, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) kernels::rmsnorm(x + t * dim, L.attn_norm.data(), xb + t * dim, dim, c_.eps);
  });
  const LinearJob qkv[3] = {{&L.wq, xb, a_.q.data()}, {&L.wk, xb, a_.k.data()}, {&L.wv, xb, a_.v.data()}};
  Linear(qkv, 3, n_);
}

void DecoderPass::AttentionInput(const DecoderLayer& L, int64_t cached, const Span& s, int64_t t0, int64_t t1) {
  const int64_t hd = c_.head_dim, qd = c_.q_dim(), kvd = c_.kv_dim();
  std::vector<float> head(c_.qk_norm ? hd : 0);  // [hd] QK-norm's input
  // In place: h[hd] = rmsnorm(h) · weight.
  auto norm_head = [&](float* h, const std::vector<float>& weight) {
    std::memcpy(head.data(), h, hd * sizeof(float));
    kernels::rmsnorm(head.data(), weight.data(), h, hd, c_.eps);
  };
  for (int64_t t = t0; t < t1; t++) {
    float* q = a_.q.data() + t * qd;   // [n_heads, hd]
    float* k = a_.k.data() + t * kvd;  // [n_kv_heads, hd]
    float* v = a_.v.data() + t * kvd;  // [n_kv_heads, hd]
    const float* angles = layer_rope_ ? layer_rope_ + t * hd : nullptr;
    if (c_.qkv_bias) {
      const kernels::KernelTable& kt = kernels::Active();
      kt.axpy_f32(1.0f, L.bq.data(), q, qd);
      kt.axpy_f32(1.0f, L.bk.data(), k, kvd);
      kt.axpy_f32(1.0f, L.bv.data(), v, kvd);
    }
    for (int64_t h = 0; h < c_.n_heads; h++) {
      if (c_.qk_norm) norm_head(q + h * hd, L.q_norm);
      if (angles) rotary_.Rotate(q + h * hd, angles);
    }
    for (int64_t g = 0; g < c_.n_kv_heads; g++) {
      if (c_.qk_norm) norm_head(k + g * hd, L.k_norm);
      if (angles) rotary_.Rotate(k + g * hd, angles);
      s.session->StoreKv(cached, g, s.pos0 + (t - s.row0), k + g * hd, v + g * hd);
    }
  }
}

void DecoderPass::Attend(const DecoderLayer& L, int64_t cached) {
  const int64_t qd = c_.q_dim();
  if (n_spans_ == 1) {
    const Span& s = spans_[0];
    ForRows(qd + c_.kv_dim(), [&](int64_t t0, int64_t t1) { AttentionInput(L, cached, s, t0, t1); });
    if (!s.steps) {
      s.session->Attention(cached, s.pos0, s.n, a_.q.data() + s.row0 * qd, a_.att.data() + s.row0 * qd, true, s.bidirectional);
      return;
    }
    // Every key and value is stored: each row sees the ones up to its own position, as its step would.
    for (int64_t t = 0; t < s.n; t++) {
      const int64_t row = s.row0 + t;
      s.session->Attention(cached, s.pos0 + t, 1, a_.q.data() + row * qd, a_.att.data() + row * qd);
    }
    return;
  }
  // Span by span, each with its own session (cache, scratch): the spans side by side across the
  // pool, each span's attention on its thread alone (one dispatch per layer, not one per span).
  pool_.ParallelFor(n_spans_, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i++) {
      const Span& s = spans_[i];
      AttentionInput(L, cached, s, s.row0, s.row0 + s.n);
      s.session->Attention(cached, s.pos0, s.n, a_.q.data() + s.row0 * qd, a_.att.data() + s.row0 * qd,
                           /*parallel=*/false, s.bidirectional);
    }
  });
}

void DecoderPass::AttentionOutput(const DecoderLayer& L) {
  const int64_t dim = c_.dim;
  float* x = a_.x.data();        // [n, dim]
  float* xb = a_.xb.data();      // [n, dim] free until the FFN norm: the sandwich norm's scratch
  float* proj = a_.proj.data();  // [n, dim]
  const LinearJob o[1] = {{&L.wo, a_.att.data(), proj}};
  Linear(o, 1, n_);
  if (c_.o_bias) {
    const kernels::KernelTable& kt = kernels::Active();
    for (int64_t t = 0; t < n_; t++) kt.axpy_f32(1.0f, L.bo.data(), proj + t * dim, dim);
  }
  ForRows(dim, [&](int64_t t0, int64_t t1) {
    AddBlockOutput(c_, L.post_attn_norm, proj + t0 * dim, xb + t0 * dim, x + t0 * dim, t1 - t0);
  });
}

void DecoderPass::Ffn(const DecoderLayer& L) {
  const int64_t dim = c_.dim;
  float* x = a_.x.data();        // [n, dim]
  float* xb = a_.xb.data();      // [n, dim]
  float* proj = a_.proj.data();  // [n, dim]
  ForRows(dim, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) kernels::rmsnorm(x + t * dim, L.ffn_norm.data(), xb + t * dim, dim, c_.eps);
  });
  if (c_.moe()) {
    const MoeOptions o{c_.n_experts_used, c_.norm_topk, c_.swiglu_limit};
    MoeFfn(pool_, steps_ ? RunLinearRows : RunLinear, L.moe, o, xb, n_, proj, a_.moe, a_.qin);
  } else {
    Dense(L, xb, proj);
  }
  ForRows(dim, [&](int64_t t0, int64_t t1) {
    AddBlockOutput(c_, L.post_ffn_norm, proj + t0 * dim, xb + t0 * dim, x + t0 * dim, t1 - t0);
  });
}

void DecoderPass::Dense(const DecoderLayer& L, const float* xb, float* proj) {
  const int64_t ffn = c_.intermediate;
  float* gate = a_.gate.data();  // [n, intermediate]
  float* up = a_.up.data();      // [n, intermediate]
  const LinearJob gate_up[2] = {{&L.w_gate, xb, gate}, {&L.w_up, xb, up}};
  Linear(gate_up, 2, n_);
  ForRows(ffn, [&](int64_t t0, int64_t t1) { GatedActivation(c_, gate + t0 * ffn, up + t0 * ffn, (t1 - t0) * ffn); });
  const LinearJob down[1] = {{&L.w_down, gate, proj}};
  Linear(down, 1, n_);
}

void DecoderPass::Output(int64_t rows, float* out) {
  if (Aborted()) throw EngineError("ABORT_ERR", "The operation was aborted");
  const int64_t dim = c_.dim, first = n_ - rows;
  const float* x = a_.x.data();  // [n, dim]
  if (!M_.has_head()) {  // a pipeline stage: the hidden states of the last rows
    std::memcpy(out, x + first * dim, rows * dim * sizeof(float));
    return;
  }
  // out [rows, vocab] = Wcls · rmsnorm(x) of the last rows.
  float* xb = a_.xb.data();  // [rows, dim]
  for (int64_t t = first; t < n_; t++)
    kernels::rmsnorm(x + t * dim, M_.final_norm().data(), xb + (t - first) * dim, dim, c_.eps);
  const LinearJob head[1] = {{&M_.classifier(), xb, out}};
  Linear(head, 1, rows);
  if (c_.logits_scaling != 1.0f) {
    const float inv = 1.0f / c_.logits_scaling;
    for (int64_t i = 0; i < rows * c_.vocab; i++) out[i] *= inv;
  }
}

void DecoderPass::Hidden(const int64_t* rows, int64_t count, float* out) {
  if (Aborted()) throw EngineError("ABORT_ERR", "The operation was aborted");
  const int64_t dim = c_.dim;
  const float* x = a_.x.data();  // [n, dim]
  for (int64_t i = 0; i < count; i++)
    kernels::rmsnorm(x + rows[i] * dim, M_.final_norm().data(), out + i * dim, dim, c_.eps);
}

}  // namespace decoder
}  // namespace weightmap
