// gemm_i8 (kernels.h) bodies shared by the SIMD files: included INSIDE an anonymous namespace of
// an *_<isa>.cc file, after q8_tiles.h, with the same int8 traits Q plus
//   static D bcast4(const void* p);          // the 4 bytes at p repeated in every int32 lane
//   static void acc_st(int32_t* p, A a);     static void fst(float* p, FV v);
//
// Register tile: M activation rows × V weight panels. Per depth step of 4 bytes it loads the
// V·VP weight vectors of the step (VP = vectors per panel; int32 lane c of a vector is output
// channel c) and broadcasts 4 activation bytes of each row, then runs M·V·VP dot products into
// int32 accumulators. The scales and the bias apply once per output at the end, so the inner
// loop is loads and dot products only (with VNNI: one vpdpbusd per 64 multiply-adds).
//  * kBias tables (u8 × s8 dot products) take the activations as u8, x + 128 (quantize_i8 of
//    those tables writes them so), and start each accumulator at the channel's corr = -128·Σw,
//    which leaves exactly Σ x·w.
//  * the others take the weights through prep_raw (the sign trick; activations in [-127, 127]).
#pragma once

template <class Q, int M, int V>
void I8Tile(const uint8_t* x, int64_t ldx, const float* xs, const I8Weights& w, const float* bias, float* y,
            int64_t ldy, int64_t p) {
  using A = typename Q::A;
  using FV = typename Q::FV;
  constexpr int L = Q::kBytes / 4;    // channels per vector
  constexpr int VP = kI8Panel / L;    // vectors per panel
  constexpr int NV = V * VP;
  const int64_t panel_bytes = w.k4 * kI8Panel;
  const int8_t* wp = w.data + p * panel_bytes;
  const int64_t j0 = p * kI8Panel;

  A acc[M][NV];  // acc[b][v]: row b, channels j0 + v·L .. j0 + v·L + L - 1
  for (int v = 0; v < NV; ++v) {
    const A init = Q::kBias ? Q::acc_ld(w.corr + j0 + v * L) : Q::acc_zero();
    for (int b = 0; b < M; ++b) acc[b][v] = init;
  }
  const int64_t steps = w.k4 / 4;
  for (int64_t s = 0; s < steps; ++s) {
    const int8_t* ws = wp + s * (kI8Panel * 4);
    typename Q::D wv[NV];
    for (int v = 0; v < NV; ++v) wv[v] = Q::ld(ws + (v / VP) * panel_bytes + (v % VP) * Q::kBytes);
    if constexpr (Q::kBias) {
      for (int b = 0; b < M; ++b) {
        const typename Q::D xb = Q::bcast4(x + b * ldx + 4 * s);
        for (int v = 0; v < NV; ++v) acc[b][v] = Q::dot(acc[b][v], xb, wv[v]);
      }
    } else {
      typename Q::WP wpv[NV];
      for (int v = 0; v < NV; ++v) wpv[v] = Q::prep_raw(wv[v]);
      for (int b = 0; b < M; ++b) {
        const typename Q::D xb = Q::bcast4(x + b * ldx + 4 * s);
        for (int v = 0; v < NV; ++v) acc[b][v] = Q::dot(acc[b][v], wpv[v], xb);
      }
    }
  }

  // y = fma(float(acc), xs·ws, bias), lane by lane in the last, partial vector of the matrix.
  for (int b = 0; b < M; ++b) {
    const FV xsv = Q::fset1(xs[b]);
    float* yr = y + b * ldy;
    for (int v = 0; v < NV; ++v) {
      const int64_t j = j0 + v * L;
      if (j + L <= w.n) {
        const FV scale = Q::fmul(xsv, Q::fld(w.scale + j));
        Q::fst(yr + j, Q::ffma(Q::cvt(acc[b][v]), scale, bias ? Q::fld(bias + j) : Q::fzero()));
      } else if (j < w.n) {
        int32_t lanes[L];
        Q::acc_st(lanes, acc[b][v]);
        for (int c = 0; c < L && j + c < w.n; ++c)
          yr[j + c] = std::fma(static_cast<float>(lanes[c]), xs[b] * w.scale[j + c], bias ? bias[j + c] : 0.0f);
      }
    }
  }
}

// The tile for the last rows (mm < M) and panels (vv < V) of a call.
template <class Q, int M, int V>
void I8TileAny(int mm, int vv, const uint8_t* x, int64_t ldx, const float* xs, const I8Weights& w, const float* bias,
               float* y, int64_t ldy, int64_t p) {
  if constexpr (M > 1) {
    if (mm < M) return I8TileAny<Q, M - 1, V>(mm, vv, x, ldx, xs, w, bias, y, ldy, p);
  }
  if constexpr (V > 1) {
    if (vv < V) return I8TileAny<Q, M, V - 1>(mm, vv, x, ldx, xs, w, bias, y, ldy, p);
  }
  I8Tile<Q, M, V>(x, ldx, xs, w, bias, y, ldy, p);
}

// Rows in blocks of M (the block's activations stay in L1), and for each block every panel of
// [p0, p1) in groups of V (the weights stream from L2: a thread's panels of one layer fit there).
template <class Q, int M, int V>
void GemmI8(const uint8_t* xq, const float* xs, int64_t m, int64_t ldx, const I8Weights& w, const float* bias,
            float* y, int64_t ldy, int64_t p0, int64_t p1) {
  if (p1 <= p0 || m <= 0) return;
  for (int64_t i = 0; i < m; i += M) {
    const int mm = int(m - i < M ? m - i : M);
    for (int64_t p = p0; p < p1; p += V) {
      const int vv = int(p1 - p < V ? p1 - p : V);
      I8TileAny<Q, M, V>(mm, vv, xq + i * ldx, ldx, xs + i, w, bias, y + i * ldy, ldy, p);
    }
  }
}
