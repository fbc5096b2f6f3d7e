// KernelTable::attention bodies shared by the SIMD files: included INSIDE an anonymous namespace
// of an *_<isa>.cc file after its vector traits F (gemm_tiles.h lists them).
//
// Queries in blocks of 4. Scores: kᵀ is gathered once per call into [hd, T32] (zero past T), so
// a tile of 4 queries × 2 vectors of keys accumulates over d with one broadcast per query and one
// load per key vector (8 independent FMA chains). Softmax per row (the shared row kernel). Then
// out: a tile of 4 queries × 2 vectors of dims accumulates over the T value rows, read in place.
// Rows past the last query of a block repeat it (their results are never stored).
#pragma once

constexpr int kAttnQueries = 4;

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

// out[t0 + a, d0 .. d0 + NV·W) for a < nq; `part` < W: one partial vector of that many dims.
template <int NV>
void AttentionValues(const float* p, int64_t T32, const float* v, int64_t T, int64_t ld, int64_t d0, int part,
                     float* out, int nq) {
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
  for (int a = 0; a < nq; ++a)
    for (int c = 0; c < NV; ++c) {
      if (part) F::st_part(out + a * ld + d0, acc[a][c], part);
      else F::st(out + a * ld + d0 + c * W, acc[a][c]);
    }
}

void AttentionHead(const float* q, const float* k, const float* v, float* out, int64_t T, int64_t hd, int64_t ld,
                   float scale, float* scratch) {
  constexpr int W = F::W;
  static_assert(32 % (2 * W) == 0, "score tiles of 2 vectors must divide the padding to 32");
  const int64_t T32 = (T + 31) / 32 * 32;
  float* kt = scratch;        // [hd, T32]
  float* p = kt + hd * T32;   // [4, T32]
  for (int64_t j = 0; j < T32; ++j)
    for (int64_t d = 0; d < hd; ++d) kt[d * T32 + j] = j < T ? k[j * ld + d] : 0.0f;

  for (int64_t t0 = 0; t0 < T; t0 += kAttnQueries) {
    const int nq = int(T - t0 < kAttnQueries ? T - t0 : kAttnQueries);
    const float* qr[kAttnQueries];
    for (int a = 0; a < kAttnQueries; ++a) qr[a] = q + (t0 + (a < nq ? a : nq - 1)) * ld;
    for (int64_t j0 = 0; j0 < T32; j0 += 2 * W) AttentionScores<2>(qr, kt, T32, hd, j0, p);
    for (int a = 0; a < nq; ++a) {
      float* row = p + a * T32;
      const typename F::V sv = F::set1(scale);
      for (int64_t j = 0; j < T32; j += W) F::st(row + j, F::fma(F::ld(row + j), sv, F::zero()));  // exact products
      softmax(row, T);
    }
    float* o = out + t0 * ld;
    int64_t d0 = 0;
    for (; d0 + 2 * W <= hd; d0 += 2 * W) AttentionValues<2>(p, T32, v, T, ld, d0, 0, o, nq);
    for (; d0 + W <= hd; d0 += W) AttentionValues<1>(p, T32, v, T, ld, d0, 0, o, nq);
    if (d0 < hd) AttentionValues<1>(p, T32, v, T, ld, d0, int(hd - d0), o, nq);
  }
}
