// KernelTable::sgemm_packed bodies shared by the SIMD files: included INSIDE an anonymous
// namespace of an *_<isa>.cc file after its vector traits F (gemm_tiles.h lists them).
//
// Depth in blocks of kPackedKBlock: a block of NP panels' weights ([kc][NP·16] floats, 8·NP KB)
// stays in L1 while every tile of MB rows passes over it. The tile keeps MB × NV accumulators
// (NV = NP·16 / W vectors of channels) and per depth step loads NV weight vectors, in address
// order, and broadcasts MB activations. The first block stores, later blocks add, the last adds
// the bias: the same order for every row, whatever the batch or the thread split.
#pragma once

constexpr int64_t kPackedKBlock = 128;

template <int MB, int NP>
void PackedTile(const float* x, const F32Panels& w, int64_t p, int64_t k0, int64_t kc, const float* bias, float* y,
                int64_t ldy, int64_t i0, bool first, bool last) {
  using V = typename F::V;
  constexpr int W = F::W;
  constexpr int VP = kF32Panel / W;  // vectors per panel
  constexpr int NV = NP * VP;
  V acc[MB][NV];
  for (int r = 0; r < MB; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = F::zero();
  const float* xr = x + i0 * w.k + k0;
  const float* bp = w.data + p * w.k * kF32Panel + k0 * kF32Panel;
  const int64_t panel = w.k * kF32Panel;
  for (int64_t d = 0; d < kc; ++d) {
    V bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = F::ld(bp + (v / VP) * panel + d * kF32Panel + (v % VP) * W);
    for (int r = 0; r < MB; ++r) {
      const V av = F::set1(xr[r * w.k + d]);
      for (int v = 0; v < NV; ++v) acc[r][v] = F::fma(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < MB; ++r)
    for (int v = 0; v < NV; ++v) {
      const int64_t j = (p + v / VP) * kF32Panel + (v % VP) * W;
      if (j >= w.n) continue;
      float* out = y + (i0 + r) * ldy + j;
      const int cnt = int(w.n - j < W ? w.n - j : W);
      V s = acc[r][v];
      if (cnt == W) {
        if (!first) s = F::add(F::ld(out), s);
        if (last && bias) s = F::add(s, F::ld(bias + j));
        F::st(out, s);
      } else {
        if (!first) s = F::add(F::ld_part(out, cnt), s);
        if (last && bias) s = F::add(s, F::ld_part(bias + j, cnt));
        F::st_part(out, s, cnt);
      }
    }
}

// The tile for the last rows (rows < MB) and panels (np < NP) of a call.
template <int MB, int NP>
void PackedTileAny(int rows, int np, const float* x, const F32Panels& w, int64_t p, int64_t k0, int64_t kc,
                   const float* bias, float* y, int64_t ldy, int64_t i0, bool first, bool last) {
  if constexpr (MB > 1) {
    if (rows < MB) return PackedTileAny<MB - 1, NP>(rows, np, x, w, p, k0, kc, bias, y, ldy, i0, first, last);
  }
  if constexpr (NP > 1) {
    if (np < NP) return PackedTileAny<MB, NP - 1>(rows, np, x, w, p, k0, kc, bias, y, ldy, i0, first, last);
  }
  PackedTile<MB, NP>(x, w, p, k0, kc, bias, y, ldy, i0, first, last);
}

template <int MB, int NP>
void SgemmPacked(const float* x, int64_t m, const F32Panels& w, const float* bias, float* y, int64_t ldy, int64_t p0,
                 int64_t p1) {
  for (int64_t k0 = 0; k0 < w.k; k0 += kPackedKBlock) {
    const int64_t kc = w.k - k0 < kPackedKBlock ? w.k - k0 : kPackedKBlock;
    const bool first = k0 == 0, last = k0 + kc >= w.k;
    for (int64_t p = p0; p < p1; p += NP) {
      const int np = int(p1 - p < NP ? p1 - p : NP);
      for (int64_t i = 0; i < m; i += MB)
        PackedTileAny<MB, NP>(int(m - i < MB ? m - i : MB), np, x, w, p, k0, kc, bias, y, ldy, i, first, last);
    }
  }
}
