// BatchStep: the forward pass of decoder_forward.cc for n rows that belong to n sessions, each at
// its own position. What differs from Forward: the RoPE angles and the KV-cache writes per row,
// and attention per row with the row's session (its Attention() over one query).
#include "engines/decoder_batch.h"

#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "kernels/kernels.h"

namespace weightmap {
namespace decoder {

namespace {

void Check(DecoderSession* const* sessions, const int32_t* ids, int64_t n) {
  if (n <= 0) throw EngineError("ERR_OUT_OF_RANGE", "a batched step needs at least one session");
  const DecoderModel* model = sessions[0]->model().get();
  if (!model->embeds() || !model->has_head())
    throw EngineError("ERR_OUT_OF_RANGE", "a batched step needs the whole model (a pipeline stage steps alone)");
  std::set<const DecoderSession*> seen;
  for (int64_t i = 0; i < n; i++) {
    const DecoderSession& s = *sessions[i];
    const std::string row = "row " + std::to_string(i);
    if (s.model().get() != model) throw EngineError("ERR_OUT_OF_RANGE", row + ": the sessions belong to different models");
    if (!seen.insert(&s).second) throw EngineError("ERR_OUT_OF_RANGE", row + ": a session appears twice in one step");
    if (s.position() >= s.context_length())
      throw EngineError("ERR_OUT_OF_RANGE", row + ": the session holds " + std::to_string(s.position()) + " of " +
                                                std::to_string(s.context_length()) + " positions; 1 more does not fit");
    if (ids[i] < 0 || ids[i] >= model->config().vocab)
      throw EngineError("ERR_OUT_OF_RANGE", row + ": token id " + std::to_string(ids[i]) +
                                                " is outside the vocabulary [0, " + std::to_string(model->config().vocab) + ")");
  }
}

}  // namespace

std::vector<bool> BatchStep::Run(DecoderSession* const* sessions, const int32_t* ids, int64_t n,
                                 const std::atomic<bool>* const* aborts, float* logits) {
  Check(sessions, ids, n);
  const DecoderModel& M = *sessions[0]->model_;
  const DecoderConfig& c = M.config();
  ThreadPool& pool = M.pool();
  const kernels::KernelTable& kt = kernels::Active();
  const int64_t dim = c.dim, hd = c.head_dim, ffn = c.intermediate, qd = c.q_dim(), kvd = c.kv_dim();
  auto all_aborted = [&]() {
    for (int64_t i = 0; i < n; i++)
      if (!aborts[i]->load(std::memory_order_relaxed)) return false;
    return true;
  };

  std::vector<int64_t> pos(n);  // the position row i is fed at
  for (int64_t i = 0; i < n; i++) pos[i] = sessions[i]->position();
  std::vector<float> x(n * dim);        // [n, dim] residual stream
  std::vector<float> xb(n * dim);       // [n, dim] normed input of a block
  std::vector<float> q(n * qd);         // [n, q_dim]
  std::vector<float> k(n * kvd);        // [n, kv_dim]
  std::vector<float> v(n * kvd);        // [n, kv_dim]
  std::vector<float> att(n * qd);       // [n, q_dim]
  std::vector<float> proj(n * dim);     // [n, dim]
  std::vector<float> gate(n * ffn);      // [n, intermediate]
  std::vector<float> up(n * ffn);        // [n, intermediate]
  std::vector<float> rope(n * hd);      // [n, hd]: cos of the hd/2 pair angles, then their sin
  std::vector<float> rope_local(c.theta_local > 0 ? n * hd : 0);  // the same for the sliding layers' base
  std::vector<QuantizedInput> qin;

  for (int64_t i = 0; i < n; i++) M.Embed(ids[i], x.data() + i * dim);
  if (c.embed_scale != 1.0f)
    for (float& e : x) e *= c.embed_scale;
  // The angles exactly as Forward computes them for one token at pos[i].
  const engines::Rope rotary = RopeOf(c, c.theta);
  for (int64_t i = 0; i < n; i++) rotary.Angles(pos[i], rope.data() + i * hd);
  if (c.theta_local > 0) {
    const engines::Rope local = RopeOf(c, c.theta_local);
    for (int64_t i = 0; i < n; i++) local.Angles(pos[i], rope_local.data() + i * hd);
  }
  const float* layer_rope = rope.data();
  auto rotate = [&](float* h, int64_t i) { rotary.Rotate(h, layer_rope + i * hd); };
  // In place: h[hd] = rmsnorm(h) · weight (head: hd floats of scratch).
  auto norm_head = [&](float* h, const std::vector<float>& weight, float* head) {
    std::memcpy(head, h, hd * sizeof(float));
    kernels::rmsnorm(head, weight.data(), h, hd, c.eps);
  };
  auto norm_rows = [&](const std::vector<float>& weight, const float* in, float* out) {
    for (int64_t i = 0; i < n; i++) kernels::rmsnorm(in + i * dim, weight.data(), out + i * dim, dim, c.eps);
  };

  for (int64_t l = M.first_layer(); l < M.end_layer(); l++) {
    if (all_aborted()) throw EngineError("ABORT_ERR", "The operation was aborted");
    const DecoderLayer& L = M.layer(l);
    const int64_t cached = l - M.first_layer();
    layer_rope = c.LayerTheta(l) == c.theta ? rope.data() : rope_local.data();

    norm_rows(L.attn_norm, x.data(), xb.data());
    const LinearJob qkv[3] = {{&L.wq, xb.data(), q.data()}, {&L.wk, xb.data(), k.data()}, {&L.wv, xb.data(), v.data()}};
    RunLinearRows(pool, qkv, 3, n, qin);

    // Row by row, each with its own session (cache, scratch): the rows side by side across the pool,
    // each row's attention on its thread alone (one dispatch per layer, not one per row).
    auto attend = [&](int64_t i) {
      DecoderSession& s = *sessions[i];
      std::vector<float> head_buffer(c.qk_norm ? hd : 0);
      float* head = head_buffer.data();
      float* qi = q.data() + i * qd;
      float* ki = k.data() + i * kvd;
      float* vi = v.data() + i * kvd;
      if (c.qkv_bias) {
        kt.axpy_f32(1.0f, L.bq.data(), qi, qd);
        kt.axpy_f32(1.0f, L.bk.data(), ki, kvd);
        kt.axpy_f32(1.0f, L.bv.data(), vi, kvd);
      }
      for (int64_t h = 0; h < c.n_heads; h++) {
        if (c.qk_norm) norm_head(qi + h * hd, L.q_norm, head);
        rotate(qi + h * hd, i);
      }
      for (int64_t g = 0; g < c.n_kv_heads; g++) {
        if (c.qk_norm) norm_head(ki + g * hd, L.k_norm, head);
        rotate(ki + g * hd, i);
        s.StoreKv(cached, g, pos[i], ki + g * hd, vi + g * hd);
      }
      // The row's query through the session's own attention (one token at pos[i]).
      s.EnsureScratch(1);
      std::memcpy(s.q_.data(), qi, qd * sizeof(float));
      s.Attention(cached, pos[i], 1, /*parallel=*/false);
      std::memcpy(att.data() + i * qd, s.att_.data(), qd * sizeof(float));
    };
    if (n == 1) attend(0);
    else pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) attend(i);
    });

    const LinearJob o[1] = {{&L.wo, att.data(), proj.data()}};
    RunLinearRows(pool, o, 1, n, qin);
    AddBlockOutput(c, L.post_attn_norm, proj.data(), xb.data(), x.data(), n);

    norm_rows(L.ffn_norm, x.data(), xb.data());
    const LinearJob gate_up[2] = {{&L.w_gate, xb.data(), gate.data()}, {&L.w_up, xb.data(), up.data()}};
    RunLinearRows(pool, gate_up, 2, n, qin);
    GatedActivation(c, gate.data(), up.data(), n * ffn);
    const LinearJob down[1] = {{&L.w_down, gate.data(), proj.data()}};
    RunLinearRows(pool, down, 1, n, qin);
    AddBlockOutput(c, L.post_ffn_norm, proj.data(), xb.data(), x.data(), n);
  }
  if (all_aborted()) throw EngineError("ABORT_ERR", "The operation was aborted");

  // logits [n, vocab] = Wcls · rmsnorm(x)
  norm_rows(M.final_norm(), x.data(), xb.data());
  const LinearJob cls[1] = {{&M.classifier(), xb.data(), logits}};
  RunLinearRows(pool, cls, 1, n, qin);

  std::vector<bool> committed(n);
  for (int64_t i = 0; i < n; i++) {
    if (aborts[i]->load()) continue;
    DecoderSession& s = *sessions[i];
    s.tokens_.push_back(ids[i]);
    s.position_.store(pos[i] + 1);
    committed[i] = true;
  }
  return committed;
}

}  // namespace decoder
}  // namespace weightmap
