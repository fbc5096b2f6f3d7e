// Q8_0 kernel bodies shared by the SIMD files (included INSIDE an anonymous namespace of an
// *_<isa>.cc file, after its intrinsics headers; see gemm_tiles.h for why). Parameterized by an
// int8 traits struct Q:
//
//   struct Q {
//     static constexpr int kBytes;     // bytes of int8 per vector; kLanes = kBytes / 4 int32 lanes
//     static constexpr bool kBias;     // the dot takes u8 weights: w ^ 0x80 = w + 128, corrected by
//                                      // -128·Σx of the group (exact for every int8 w)
//     using D;  using A;  using FV;    // int8 data, int32 accumulator, f32 vectors
//     struct WP;                       // a weight vector prepared for dot()
//     static D ld(const void*);
//     static A acc_zero(); static A acc_lane0(int32_t); static A acc_ld(const int32_t*);
//     static void acc_st(int32_t*, A);  static A bias_corr(A acc, D x);  // kBias only (matvec):
//                                      // acc[l] - 128·Σ_{b<4} x[4l+b]
//     static WP prep_raw(D w);         // weights as stored
//     static WP prep_relaid(D w);      // weights written by Relayout (already ^0x80 when kBias)
//     static A dot(A acc, const WP& w, D x);  // acc[l] += Σ_{b<4} w[4l+b]·x[4l+b], exact
//     static FV cvt(A); static FV fzero(); static FV fset1(float); static FV fld(const float*);
//     static FV fmul(FV, FV); static FV ffma(FV a, FV b, FV c); static float freduce(FV);
//     static void relayout(const int8_t* src, const Q8Layout&, int group, uint32_t flip, uint8_t* dst);
//                                      // Q8Relayout below, or a vector transpose with the same result
//   };
//
// Two shapes of the same arithmetic:
//  * Q8Matvec (m = 1, memory-bound): weights read once, straight from the tensor. Each group's
//    int32 comes from dot() over its vectors; then acc += cvt(int32 lanes) · (w_s·x_s).
//  * Q8Matmul (prefill, compute-bound): both operands are first relaid out so that int32 lane j
//    of a vector belongs to group j of a "superblock" of kLanes groups (4 bytes of each group per
//    vector). The int32 of kLanes groups then accumulate side by side, and the f32 scaling runs
//    once per superblock instead of once per group: per output and superblock, group/4 dot()s
//    and three float ops. Weight rows are relaid in blocks that stay in L2 and reused by every
//    activation row; X is relaid once per call.
#pragma once

constexpr int64_t kQ8WeightBlockBytes = 128 << 10;  // relaid weight rows per block (L2-resident)

inline int64_t Q8Align64(int64_t bytes) { return (bytes + 63) & ~int64_t(63); }

// ---------------------------------------------------------------- matvec (m == 1)
// Memory-bound: the weights stream once, in address order (one row after another; rows read
// side by side in group-sized pieces defeat the hardware prefetchers), so the loop only has to
// keep up with DRAM. Per group: its int32 lanes from dot() over the group's vectors, then
// acc += cvt(lanes) · (w_s·x_s), with four accumulators so that consecutive groups do not wait on
// each other's multiply-add. Prepared once per call or per block of rows, not per group:
//  * kBias: per group and int32 lane, -128·Σ of the activations that lane multiplies
//    (corr [groups][lanes]), the dot's starting value: every lane then holds exactly
//    Σ w·x over its bytes (w ^ 0x80 = w + 128 contributes 128·x too much per byte);
//  * the scale products w_s·x_s of kQ8MatvecBlockRows rows at a time (cs [rows][groups]).
constexpr int64_t kQ8MatvecBlockRows = 16;

// The scales are a second stream, read in bursts of a block's rows: without this prefetch of the
// next block's, their DRAM latency showed as ~8% of decode (perf: the stall on the scale loads).
inline void Q8PrefetchNextScales(const float* ws, int64_t groups, int64_t b0, int64_t r1) {
#if defined(__GNUC__)
  if (b0 + kQ8MatvecBlockRows >= r1) return;
  const int64_t next = (r1 - b0 - kQ8MatvecBlockRows) < kQ8MatvecBlockRows ? (r1 - b0 - kQ8MatvecBlockRows)
                                                                             : kQ8MatvecBlockRows;
  const char* p = reinterpret_cast<const char*>(ws + (b0 + kQ8MatvecBlockRows) * groups);
  for (int64_t off = 0; off < next * groups * int64_t(sizeof(float)); off += 64) __builtin_prefetch(p + off);
#else
  (void)ws, (void)groups, (void)b0, (void)r1;
#endif
}

// kBias: per group and int32 lane, -128·Σ of the activations that lane multiplies (see above),
// group g's lanes at corr + g · stride.
template <class Q>
void Q8BiasCorrection(const int8_t* xq, int64_t groups, int group, int32_t* corr, int64_t stride) {
  for (int64_t g = 0; g < groups; ++g) {
    typename Q::A c = Q::acc_zero();
    for (int v = 0; v < group / Q::kBytes; ++v) c = Q::bias_corr(c, Q::ld(xq + g * group + v * Q::kBytes));
    Q::acc_st(corr + g * stride, c);
  }
}

template <class Q>
float Q8MatvecRow(const int8_t* w, const float* cs, const int8_t* xq, const int32_t* corr, int64_t groups,
                  int group) {
  using A = typename Q::A;
  using FV = typename Q::FV;
  constexpr int L = Q::kBytes / 4;
  const int vecs = group / Q::kBytes;
  FV acc[4] = {Q::fzero(), Q::fzero(), Q::fzero(), Q::fzero()};
  auto one = [&](int64_t g, FV& a) {
    A ia = Q::kBias ? Q::acc_ld(corr + g * L) : Q::acc_zero();
    const int64_t off = g * group;
    for (int v = 0; v < vecs; ++v)
      ia = Q::dot(ia, Q::prep_raw(Q::ld(w + off + v * Q::kBytes)), Q::ld(xq + off + v * Q::kBytes));
    a = Q::ffma(Q::cvt(ia), Q::fset1(cs[g]), a);
  };
  int64_t g = 0;
  for (; g + 4 <= groups; g += 4) {
    one(g, acc[0]);
    one(g + 1, acc[1]);
    one(g + 2, acc[2]);
    one(g + 3, acc[3]);
  }
  for (; g < groups; ++g) one(g, acc[0]);
  // a·1 + b: the exact sum rounded once (the traits have no plain vector add)
  return Q::freduce(Q::ffma(acc[0], Q::fset1(1.0f), acc[1])) + Q::freduce(Q::ffma(acc[2], Q::fset1(1.0f), acc[3]));
}

// Needs group % Q::kBytes == 0.
template <class Q>
void Q8Matvec(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t cols,
              int group, int64_t r0, int64_t r1) {
  constexpr int L = Q::kBytes / 4;
  const int64_t groups = cols / group;
  if (r1 <= r0) return;
  const int64_t corr_bytes = Q::kBias ? Q8Align64(groups * L * int64_t(sizeof(int32_t))) : 0;
  uint8_t* buf = static_cast<uint8_t*>(
      Scratch(kScratchA, size_t(corr_bytes + kQ8MatvecBlockRows * groups * int64_t(sizeof(float)))));
  int32_t* corr = reinterpret_cast<int32_t*>(buf);
  float* cs = reinterpret_cast<float*>(buf + corr_bytes);
  if constexpr (Q::kBias) Q8BiasCorrection<Q>(xq, groups, group, corr, L);
  for (int64_t b0 = r0; b0 < r1; b0 += kQ8MatvecBlockRows) {
    const int64_t rows = (r1 - b0) < kQ8MatvecBlockRows ? (r1 - b0) : kQ8MatvecBlockRows;
    Q8PrefetchNextScales(ws, groups, b0, r1);
    for (int64_t a = 0; a < rows; ++a)
      for (int64_t g = 0; g < groups; ++g) cs[a * groups + g] = ws[(b0 + a) * groups + g] * xs[g];
    for (int64_t a = 0; a < rows; ++a)
      y[b0 + a] = Q8MatvecRow<Q>(wq + (b0 + a) * cols, cs + a * groups, xq, corr, groups, group);
  }
}

// ---------------------------------------------------------------- matvec of a few rows (batched decode)
// M activation rows against the same weight row, each result bitwise that of Q8Matvec: per
// activation row the same int32 per group and the same four accumulator chains (group g into chain
// g % 4, the groups past the last multiple of 4 into chain 0, in order), combined the same way.
// Each weight vector is loaded and prepared once for all M rows. The chains run two at a time
// instead of four side by side, so M rows hold 2·M accumulators, not 4·M (the M rows' chains are
// independent and hide the multiply-add latency instead). The activations of a tile are
// interleaved so that one pointer and constant offsets reach all M rows (separate row pointers ran
// out of registers and made the loop load-bound):
//   xr [groups][vecs][M][kBytes], xsr [groups][M], corr [groups][M][lanes] (kBias); w and ws: the
//   weight row and its scales; y: row i at y[i · ldy].
template <class Q, int M>
void Q8MatvecRowsTile(const int8_t* w, const float* ws, const int8_t* xr, const float* xsr, const int32_t* corr,
                      int64_t groups, int group, float* y, int64_t ldy) {
  using A = typename Q::A;
  using FV = typename Q::FV;
  constexpr int L = Q::kBytes / 4;
  const int vecs = group / Q::kBytes;
  const int64_t quads = groups / 4 * 4;
  float first_half[M] = {};
  for (int h = 0; h < 2; ++h) {
    FV acc[2][M];
    for (int c = 0; c < 2; ++c) {
      for (int b = 0; b < M; ++b) acc[c][b] = Q::fzero();
      auto one = [&](int64_t g) {
        A ia[M];
        for (int b = 0; b < M; ++b) ia[b] = Q::kBias ? Q::acc_ld(corr + (g * M + b) * L) : Q::acc_zero();
        const int8_t* wg = w + g * group;
        const int8_t* xg = xr + g * vecs * M * Q::kBytes;
        auto vec = [&](int v) {
          const auto wv = Q::prep_raw(Q::ld(wg + v * Q::kBytes));
          for (int b = 0; b < M; ++b) ia[b] = Q::dot(ia[b], wv, Q::ld(xg + (v * M + b) * Q::kBytes));
        };
        // One vector per group (the usual case) without the loop: GCC otherwise copies every
        // int32 sum to another register and back around it.
        if (vecs == 1) vec(0);
        else
          for (int v = 0; v < vecs; ++v) vec(v);
        const float wsg = ws[g];  // w_s·x_s rounded as Q8Matvec's cs
        for (int b = 0; b < M; ++b) acc[c][b] = Q::ffma(Q::cvt(ia[b]), Q::fset1(wsg * xsr[g * M + b]), acc[c][b]);
      };
      const int chain = 2 * h + c;
      for (int64_t g = chain; g < quads; g += 4) one(g);
      if (chain == 0)
        for (int64_t g = quads; g < groups; ++g) one(g);
    }
    for (int b = 0; b < M; ++b) {
      const float sum = Q::freduce(Q::ffma(acc[0][b], Q::fset1(1.0f), acc[1][b]));
      if (h == 0) first_half[b] = sum;
      else y[b * ldy] = first_half[b] + sum;
    }
  }
}

template <class Q, int M>
void Q8MatvecRowsTileAny(int mm, const int8_t* w, const float* ws, const int8_t* xr, const float* xsr,
                         const int32_t* corr, int64_t groups, int group, float* y, int64_t ldy) {
  if constexpr (M > 1) {
    if (mm < M) return Q8MatvecRowsTileAny<Q, M - 1>(mm, w, ws, xr, xsr, corr, groups, group, y, ldy);
  }
  Q8MatvecRowsTile<Q, M>(w, ws, xr, xsr, corr, groups, group, y, ldy);
}

// Rows [r0, r1) of Y [m, ldy] for m activation rows, each bitwise Q8Matvec of its row. Needs
// group % Q::kBytes == 0. MaxM: activation rows per tile (as many as the registers hold); the
// tiles of m rows are laid out one after another (tile i0 at xr + i0 · cols, xsr + i0 · groups,
// corr + i0 · groups · L).
template <class Q, int MaxM>
void Q8MatvecRows(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t m,
                  int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  constexpr int L = Q::kBytes / 4;
  const int64_t groups = cols / group;
  const int vecs = group / Q::kBytes;
  if (r1 <= r0 || m <= 0) return;
  // One row: the one-row kernel itself (four chains side by side suit it better).
  if (m == 1) return Q8Matvec<Q>(wq, ws, xq, xs, y, cols, group, r0, r1);
  const int64_t x_bytes = Q8Align64(m * cols);
  const int64_t corr_bytes = Q::kBias ? Q8Align64(m * groups * L * int64_t(sizeof(int32_t))) : 0;
  uint8_t* buf =
      static_cast<uint8_t*>(Scratch(kScratchA, size_t(x_bytes + corr_bytes + m * groups * int64_t(sizeof(float)))));
  int8_t* xr = reinterpret_cast<int8_t*>(buf);
  int32_t* corr = reinterpret_cast<int32_t*>(buf + x_bytes);
  float* xsr = reinterpret_cast<float*>(buf + x_bytes + corr_bytes);
  for (int64_t i0 = 0; i0 < m; i0 += MaxM) {
    const int mm = int((m - i0) < MaxM ? (m - i0) : MaxM);
    for (int b = 0; b < mm; ++b) {
      const int8_t* xi = xq + (i0 + b) * cols;
      for (int64_t g = 0; g < groups; ++g) {
        xsr[i0 * groups + g * mm + b] = xs[(i0 + b) * groups + g];
        for (int v = 0; v < vecs; ++v)
          std::memcpy(xr + i0 * cols + ((g * vecs + v) * mm + b) * Q::kBytes, xi + g * group + v * Q::kBytes,
                      size_t(Q::kBytes));
      }
      if constexpr (Q::kBias) Q8BiasCorrection<Q>(xi, groups, group, corr + (i0 * groups + b) * L, int64_t(mm) * L);
    }
  }
  for (int64_t b0 = r0; b0 < r1; b0 += kQ8MatvecBlockRows) {
    const int64_t rows = (r1 - b0) < kQ8MatvecBlockRows ? (r1 - b0) : kQ8MatvecBlockRows;
    Q8PrefetchNextScales(ws, groups, b0, r1);
    for (int64_t r = b0; r < b0 + rows; ++r) {
#if defined(__GNUC__)
      // The tile reads a row in four strided passes with long bodies between loads, which the
      // hardware prefetchers and the out-of-order window do not cover: fetch two rows ahead.
      if (r + 2 < r1)
        for (int64_t off = 0; off < cols; off += 64) __builtin_prefetch(wq + (r + 2) * cols + off);
#endif
      for (int64_t i0 = 0; i0 < m; i0 += MaxM) {
        const int mm = int((m - i0) < MaxM ? (m - i0) : MaxM);
        Q8MatvecRowsTileAny<Q, MaxM>(mm, wq + r * cols, ws + r * groups, xr + i0 * cols, xsr + i0 * groups,
                                     corr + i0 * groups * L, groups, group, y + i0 * ldy + r, ldy);
      }
    }
  }
}

// matvec_q8_rows as a loop of a table's own matvec_q8 (the group sizes its tiles do not take).
template <auto Matvec>
void Q8MatvecEachRow(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t m,
                     int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  for (int64_t i = 0; i < m; ++i) Matvec(wq, ws, xq + i * cols, xs + i * (cols / group), y + i * ldy, cols, group, r0, r1);
}

// ---------------------------------------------------------------- matmul (prefill)
struct Q8Layout {
  int64_t groups;       // per row
  int64_t superblocks;  // ceil(groups / lanes)
  int steps;            // group / 4: vectors per superblock
  int64_t row_bytes;    // relaid bytes per row: superblocks · steps · vector bytes
  int64_t lanes_total;  // superblocks · lanes: padded scales per row
};

// One row of int8 [cols] -> [superblock][step][lane][4 bytes]: lane j of step s holds bytes
// 4s..4s+3 of group (superblock·lanes + j), each byte xored with `flip`; missing groups are 0
// (or flip: their scales are 0 and their activations 0, so they add nothing either way).
template <int Lanes>
void Q8Relayout(const int8_t* src, const Q8Layout& l, int group, uint32_t flip, uint8_t* dst) {
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
  for (int64_t sb = 0; sb < l.superblocks; ++sb) {
    uint32_t* block = d + sb * l.steps * Lanes;
    for (int j = 0; j < Lanes; ++j) {
      const int64_t g = sb * Lanes + j;
      if (g < l.groups) {
        const int8_t* gp = src + g * group;
        for (int s = 0; s < l.steps; ++s) {
          uint32_t v;
          std::memcpy(&v, gp + 4 * s, 4);
          block[s * Lanes + j] = v ^ flip;
        }
      } else {
        for (int s = 0; s < l.steps; ++s) block[s * Lanes + j] = 0;
      }
    }
  }
}

// Per-group values of one row, padded with zeros to whole superblocks.
template <class T>
void Q8Pad(const T* src, const Q8Layout& l, T* dst) {
  for (int64_t g = 0; g < l.lanes_total; ++g) dst[g] = g < l.groups ? src[g] : T(0);
}

template <class Q, int R, int M>
void Q8MatmulTile(const uint8_t* wr, const float* wsr, const uint8_t* xr, const float* xsr, const int32_t* corr,
                  const Q8Layout& l, float* y, int64_t ldy, int64_t i0, int64_t r) {
  using A = typename Q::A;
  using FV = typename Q::FV;
  constexpr int L = Q::kBytes / 4;
  const int64_t sb_bytes = int64_t(l.steps) * Q::kBytes;
  FV acc[R][M];
  for (int a = 0; a < R; ++a)
    for (int b = 0; b < M; ++b) acc[a][b] = Q::fzero();
  for (int64_t sb = 0; sb < l.superblocks; ++sb) {
    // One load per accumulator (not one value copied R times): GCC then keeps each accumulator
    // in one register across the loop instead of shuffling copies around the back edge.
    A ia[R][M];
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < M; ++b)
        ia[a][b] = Q::kBias ? Q::acc_ld(corr + (i0 + b) * l.lanes_total + sb * L) : Q::acc_zero();
    const uint8_t* wp = wr + sb * sb_bytes;
    const uint8_t* xp = xr + sb * sb_bytes;
    for (int s = 0; s < l.steps; ++s) {
      typename Q::D xv[M];
      for (int b = 0; b < M; ++b) xv[b] = Q::ld(xp + (i0 + b) * l.row_bytes + int64_t(s) * Q::kBytes);
      for (int a = 0; a < R; ++a) {
        const auto wv = Q::prep_relaid(Q::ld(wp + a * l.row_bytes + int64_t(s) * Q::kBytes));
        for (int b = 0; b < M; ++b) ia[a][b] = Q::dot(ia[a][b], wv, xv[b]);
      }
    }
    for (int a = 0; a < R; ++a) {
      const FV wsv = Q::fld(wsr + a * l.lanes_total + sb * L);
      for (int b = 0; b < M; ++b)
        acc[a][b] = Q::ffma(Q::cvt(ia[a][b]), Q::fmul(wsv, Q::fld(xsr + (i0 + b) * l.lanes_total + sb * L)),
                            acc[a][b]);
    }
  }
  for (int a = 0; a < R; ++a)
    for (int b = 0; b < M; ++b) y[(i0 + b) * ldy + r + a] = Q::freduce(acc[a][b]);
}

template <class Q, int R, int M>
void Q8MatmulTileAny(int rr, int mm, const uint8_t* wr, const float* wsr, const uint8_t* xr, const float* xsr,
                     const int32_t* corr, const Q8Layout& l, float* y, int64_t ldy, int64_t i0, int64_t r) {
  if constexpr (R > 1) {
    if (rr < R) return Q8MatmulTileAny<Q, R - 1, M>(rr, mm, wr, wsr, xr, xsr, corr, l, y, ldy, i0, r);
  }
  if constexpr (M > 1) {
    if (mm < M) return Q8MatmulTileAny<Q, R, M - 1>(rr, mm, wr, wsr, xr, xsr, corr, l, y, ldy, i0, r);
  }
  Q8MatmulTile<Q, R, M>(wr, wsr, xr, xsr, corr, l, y, ldy, i0, r);
}

// Needs group % 4 == 0. R×M: weight rows × activation rows per register tile.
template <class Q, int R, int M>
void Q8Matmul(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t m,
              int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  constexpr int L = Q::kBytes / 4;
  Q8Layout l;
  l.groups = cols / group;
  l.superblocks = (l.groups + L - 1) / L;
  l.steps = group / 4;
  l.row_bytes = l.superblocks * l.steps * Q::kBytes;
  l.lanes_total = l.superblocks * L;
  if (r1 <= r0 || m <= 0) return;

  // X: relaid rows, padded scales and (kBias) the int32 corrections -128·Σx per group.
  const int64_t x_bytes = Q8Align64(m * l.row_bytes);
  const int64_t xs_bytes = Q8Align64(m * l.lanes_total * int64_t(sizeof(float)));
  const int64_t corr_bytes = Q::kBias ? Q8Align64(m * l.lanes_total * int64_t(sizeof(int32_t))) : 0;
  uint8_t* xbuf = static_cast<uint8_t*>(Scratch(kScratchA, size_t(x_bytes + xs_bytes + corr_bytes)));
  uint8_t* xr = xbuf;
  float* xsr = reinterpret_cast<float*>(xbuf + x_bytes);
  int32_t* corr = Q::kBias ? reinterpret_cast<int32_t*>(xbuf + x_bytes + xs_bytes) : nullptr;
  for (int64_t i = 0; i < m; ++i) {
    const int8_t* xi = xq + i * cols;
    Q::relayout(xi, l, group, 0u, xr + i * l.row_bytes);
    Q8Pad(xs + i * l.groups, l, xsr + i * l.lanes_total);
    if (Q::kBias) {
      int32_t* ci = corr + i * l.lanes_total;
      for (int64_t g = 0; g < l.lanes_total; ++g) {
        int32_t sum = 0;
        if (g < l.groups)
          for (int e = 0; e < group; ++e) sum += xi[g * group + e];
        ci[g] = -128 * sum;
      }
    }
  }

  // W in blocks of rows that stay in L2 while all of X passes over them.
  int64_t block_rows = kQ8WeightBlockBytes / (l.row_bytes > 0 ? l.row_bytes : 1) / R * R;
  if (block_rows < R) block_rows = R;
  const int64_t w_bytes = Q8Align64(block_rows * l.row_bytes);
  uint8_t* wbuf = static_cast<uint8_t*>(
      Scratch(kScratchB, size_t(w_bytes + Q8Align64(block_rows * l.lanes_total * int64_t(sizeof(float))))));
  float* wsr = reinterpret_cast<float*>(wbuf + w_bytes);
  const uint32_t flip = Q::kBias ? 0x80808080u : 0u;
  for (int64_t b0 = r0; b0 < r1; b0 += block_rows) {
    const int64_t rows = (r1 - b0) < block_rows ? (r1 - b0) : block_rows;
    for (int64_t a = 0; a < rows; ++a) {
      Q::relayout(wq + (b0 + a) * cols, l, group, flip, wbuf + a * l.row_bytes);
      Q8Pad(ws + (b0 + a) * l.groups, l, wsr + a * l.lanes_total);
    }
    for (int64_t i = 0; i < m; i += M) {
      const int mm = int((m - i) < M ? (m - i) : M);
      for (int64_t a = 0; a < rows; a += R) {
        const int rr = int((rows - a) < R ? (rows - a) : R);
        Q8MatmulTileAny<Q, R, M>(rr, mm, wbuf + a * l.row_bytes, wsr + a * l.lanes_total, xr, xsr, corr, l, y, ldy,
                                 i, b0 + a);
      }
    }
  }
}
