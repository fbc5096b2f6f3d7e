// KernelTable::attention bodies shared by the SIMD files: included INSIDE an anonymous namespace
// of an *_<isa>.cc file after its vector traits F (gemm_tiles.h lists them).
//
// Queries in blocks of 4 or 8. Scores: kᵀ is gathered once per call into [hd, T32] (zero past T), so
// a tile of those queries × 2 vectors of keys accumulates over d with one broadcast per query and one
// load per key vector (8 independent FMA chains). Each score row becomes e^(scale·(s - max)) in
// place (the shared row kernels); out: a tile of the queries × 2 vectors of dims accumulates the
// T value rows (read in place) weighted by those, and is divided by the row's Σ e once at the
// end. Rows past the last query of a block repeat it (their results are never stored).
#pragma once

// Queries per block: 8 with 32 vector registers and 16-lane vectors (16 accumulators), else 4.
constexpr int kAttnQueries = F::W >= 16 ? 8 : 4;
static_assert(kAttnQueries <= kAttentionMaxQueries, "AttentionScratch holds kAttentionMaxQueries score rows");

template <int NV>
void AttentionScores(const float* const* qr, const float* kt, int64_t T32, int64_t hd, int64_t j0, float* p) {
  using V = typename F::V;
  constexpr int W = F::W;
  V acc[kAttnQueries][NV];
  for (int a = 0; a < kAttnQueries; ++a)
    for (int c = 0; c < NV; ++c) acc[a][c] = F::zero();
  for (int64_t d = 0; d < hd; ++d) {
    V kv[NV];
    for (int c = 0; c < NV; ++c) kv[c] = F::ld(kt + d * T32 + j0 + c * W);
    for (int a = 0; a < kAttnQueries; ++a) {
      const V qa = F::set1(qr[a][d]);
      for (int c = 0; c < NV; ++c) acc[a][c] = F::fma(qa, kv[c], acc[a][c]);
    }
  }
  for (int a = 0; a < kAttnQueries; ++a)
    for (int c = 0; c < NV; ++c) F::st(p + a * T32 + j0 + c * W, acc[a][c]);
}

// out[t0 + a, d0 .. d0 + NV·W) = Σ_j p[a, j]·v[j] · inv[a] for a < nq; `part` < W: one partial
// vector of that many dims.
template <int NV>
void AttentionValues(const float* p, const float* inv, int64_t T32, const float* v, int64_t T, int64_t ld,
                     int64_t d0, int part, float* out, int nq) {
  using V = typename F::V;
  constexpr int W = F::W;
  V acc[kAttnQueries][NV];
  for (int a = 0; a < kAttnQueries; ++a)
    for (int c = 0; c < NV; ++c) acc[a][c] = F::zero();
  for (int64_t j = 0; j < T; ++j) {
    V vv[NV];
    for (int c = 0; c < NV; ++c) vv[c] = part ? F::ld_part(v + j * ld + d0, part) : F::ld(v + j * ld + d0 + c * W);
    for (int a = 0; a < kAttnQueries; ++a) {
      const V pa = F::set1(p[a * T32 + j]);
      for (int c = 0; c < NV; ++c) acc[a][c] = F::fma(pa, vv[c], acc[a][c]);
    }
  }
  for (int a = 0; a < nq; ++a) {
    const V scale = F::set1(inv[a]);
    for (int c = 0; c < NV; ++c) {
      const V o = F::fma(acc[a][c], scale, F::zero());
      if (part) F::st_part(out + a * ld + d0, o, part);
      else F::st(out + a * ld + d0 + c * W, o);
    }
  }
}

void AttentionHead(const float* q, const float* k, const float* v, float* out, int64_t T, int64_t hd, int64_t ld,
                   float scale, float* scratch) {
  constexpr int W = F::W;
  static_assert(32 % (2 * W) == 0, "score tiles of 2 vectors must divide the padding to 32");
  const int64_t T32 = (T + 31) / 32 * 32;
  float* kt = scratch;        // [hd, T32]
  float* p = kt + hd * T32;   // [kAttnQueries, T32]
  for (int64_t d = 0; d < hd; ++d) {  // contiguous stores; the strided loads overlap each other
    float* row = kt + d * T32;
    for (int64_t j = 0; j < T; ++j) row[j] = k[j * ld + d];
    for (int64_t j = T; j < T32; ++j) row[j] = 0.0f;
  }

  for (int64_t t0 = 0; t0 < T; t0 += kAttnQueries) {
    const int nq = int(T - t0 < kAttnQueries ? T - t0 : kAttnQueries);
    const float* qr[kAttnQueries];
    for (int a = 0; a < kAttnQueries; ++a) qr[a] = q + (t0 + (a < nq ? a : nq - 1)) * ld;
    for (int64_t j0 = 0; j0 < T32; j0 += 2 * W) AttentionScores<2>(qr, kt, T32, hd, j0, p);
    float inv[kAttnQueries] = {};
    for (int a = 0; a < nq; ++a) {
      float* row = p + a * T32;
      inv[a] = static_cast<float>(1.0 / exp_sum(row, T, scale, max_f32(row, T) * scale));  // scale > 0
    }
    float* o = out + t0 * ld;
    int64_t d0 = 0;
    for (; d0 + 2 * W <= hd; d0 += 2 * W) AttentionValues<2>(p, inv, T32, v, T, ld, d0, 0, o, nq);
    for (; d0 + W <= hd; d0 += W) AttentionValues<1>(p, inv, T32, v, T, ld, d0, 0, o, nq);
    if (d0 < hd) AttentionValues<1>(p, inv, T32, v, T, ld, d0, int(hd - d0), o, nq);
  }
}
