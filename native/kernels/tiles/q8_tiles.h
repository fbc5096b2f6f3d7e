// Q8_0 kernel bodies shared by the SIMD files (included INSIDE an anonymous namespace of an
// *_<isa>.cc file, after its intrinsics headers; see gemm_tiles.h for why). Parameterized by an
// int8 traits struct Q:
//
//   struct Q {
//     static constexpr int kBytes;     // bytes of int8 per vector; kLanes = kBytes / 4 int32 lanes
//     static constexpr bool kBias;     // the dot takes u8 × s8. Matmul: u8 weights w ^ 0x80 = w + 128,
//                                      // corrected by -128·Σx of the group (exact for every int8 w);
//                                      // matvec: u8 activations x ^ 0x80, corrected by -128·Σw
//     using D;  using A;  using FV;    // int8 data, int32 accumulator, f32 vectors
//     struct WP;                       // a weight vector prepared for dot()
//     static D ld(const void*);
//     static A acc_zero(); static A acc_lane0(int32_t); static A acc_ld(const int32_t*);
//     static void acc_st(int32_t*, A);  static A bias_corr(A acc, D x);  // kBias only (matmul):
//                                      // acc[l] - 128·Σ_{b<4} x[4l+b]
//     static WP prep_raw(D w);         // weights as stored
//     static WP prep_relaid(D w);      // weights written by Relayout (already ^0x80 when kBias)
//     static A dot(A acc, const WP& w, D x);  // acc[l] += Σ_{b<4} w[4l+b]·x[4l+b], exact
//     static A dot_xw(A acc, D xu, D w);      // kBias only (matvec): acc[l] += Σ_b u8(xu)·s8(w), exact
//     static A wcorr(A acc, D w);             // kBias only (matvec): acc[l] - 128·Σ_{b<4} w[4l+b]
//     static FV cvt(A); static FV fzero(); static FV fset1(float); static FV fld(const float*);
//     static FV fmul(FV, FV); static FV ffma(FV a, FV b, FV c); static float freduce(FV);
//     static FV fpair(const float* s);  // 64-byte vectors only: lanes [0, 8) s[0], [8, 16) s[1]
//     static D ld_half(const void*);    // 64-byte vectors only: 32 bytes, the upper half zero
//     static FV fquad(const float* s);  // 64-byte vectors only: lane l s[kQuadGroup[l]] (below)
//     static A combine2(A a, A b);      // 64-byte vectors only: per 128-bit lane [a0+a2, a1+a3, b0+b2, b1+b3]
//     static void relayout(const int8_t* src, const Q8Layout&, int group, uint32_t flip, uint8_t* dst);
//                                      // Q8Relayout below, or a vector transpose with the same result
//   };
//
// Two shapes of the same arithmetic:
//  * Q8MatvecRows (decode, memory-bound; m = 1 and batches of a few rows alike): weights read
//    once, straight from the tensor. Each group's int32 lanes come from dot() over its vectors;
//    then acc += cvt(int32 lanes) · (w_s·x_s).
//  * Q8Matmul (prefill, compute-bound): both operands are first relaid out so that int32 lane j
//    of a vector belongs to group j of a "superblock" of kLanes groups (4 bytes of each group per
//    vector). The int32 of kLanes groups then accumulate side by side, and the f32 scaling runs
//    once per superblock instead of once per group: per output and superblock, group/4 dot()s
//    and three float ops. Weight rows are relaid in blocks that stay in L2 and reused by every
//    activation row; X is relaid once per call.
#pragma once

constexpr int64_t kQ8WeightBlockBytes = 128 << 10;  // relaid weight rows per block (L2-resident)

inline int64_t Q8Align64(int64_t bytes) { return (bytes + 63) & ~int64_t(63); }

// ---------------------------------------------------------------- matvec (decode: m >= 1 activation rows)
// Memory-bound at m = 1, so the weights stream once, in address order (one row after another:
// rows read side by side in pieces defeat the hardware prefetchers). A row's weights are taken in
// "units": one vector of two groups (Pairs: 64-byte vectors, group 32) or one group of
// group / kBytes vectors. Per unit and activation row b:
//   ia  = corr + Σ_vectors dot(w, x)            int32 lanes, each exactly Σ w·x over its bytes
//   acc = fma(cvt(ia), wscale · xscale, acc)    per lane the scales of the lane's group
// with two accumulators (even units, odd units) per activation row, and y = reduce(acc0 + acc1).
// Pairs take two units at once: the int32 lanes of both, summed two by two within each group
// (combine2: 4 lanes per group, 4 groups per vector), go through the float side together, so the
// cvt, scale product and fma run once per two units (the float side is most of the work per
// weight byte at 8 rows: one vpdpbusd against three float operations per unit and row); units of
// pairs alternate between the two accumulators, an odd last unit goes to the second.
// Pairs with cols an odd multiple of 32 (stories15M's 288): the last group is a half unit, its 32
// weight bytes loaded into the lower half of a vector (ld_half: the upper half zero, so its lanes
// hold 0 and add nothing), scaled by its one group's scales, into the first accumulator. The row
// then runs at the pair rate but for that one group (before: the whole row one group per ymm).
// This arithmetic is the same for every m: up to MaxM activation rows share each weight vector
// load and its preparation, and a row's result is independent of m, of the tile it lands in and
// of the row range (batched decode gives the tokens of single steps by construction).
//
// kBias (vpdpbusd: u8 × s8): the activations are the u8 operand, x ^ 0x80 = x + 128 (x is in
// [-127, 127]), and the weights as stored the s8 one; the dot then holds 128·Σw too much per lane,
// so ia starts at corr = -128·Σw of the lane's weight bytes (Q8WeightCorr): computed once per
// weight vector and shared by the tile's rows, where a correction from the activations' side
// would be one more vector per row and unit to keep in L1.
//
// The activations are prepared once per product (Q8RowsPrepare, matvec_q8_rows' first half, which
// a batched step runs once and shares between the threads' row blocks), per tile of mm rows
// interleaved unit by unit so that one pointer and constant offsets reach every row of the tile
// (separate row pointers ran out of registers and made the loop load-bound):
//   per unit: x [vectors per unit][mm][kBytes] (kBias: x ^ 0x80), xscale [mm][lanes] f32;
//   Pairs, per two units: x [2][mm][kBytes], xscale [mm][16] in combine2's lane order (fquad);
//   Pairs' half unit (last): x [mm][kBytes] (the group's 32 bytes, then 32 zeros),
//   xscale [mm][16] (lanes [0, 8) the group's scale, [8, 16) 0).
// That is 3 (Pairs) to 4 bytes per column and row: the 8 rows of a 3072-column row in 36 KB of L1.

// Prepared activations of one tile above this many bytes (long rows: w_down of large models) go
// in tiles of half as many rows, so that a tile and the weights prefetched ahead stay in L1 (each
// weight row is then read once per tile, the second time from L1).
constexpr int64_t kQ8TileBytes = 40 << 10;

// The unit shape of a call: Pairs needs group * 2 == kBytes (cols % kBytes == group: a last half
// unit); otherwise group % kBytes == 0.
template <class Q, bool Pairs>
struct Q8Units {
  int64_t count;  // whole units per row
  int vectors;    // vectors per unit
  bool half;      // Pairs: one more group after the whole units, as a half unit
  int64_t Bytes(int mm) const {  // prepared activation bytes of one unit for mm rows
    return int64_t(mm) * Q::kBytes * (vectors + 1);
  }
  // Pairs: units go two by two (x of both, then one vector of scales per row), an odd last one alone.
  int64_t TwoBytes(int mm) const { return int64_t(mm) * Q::kBytes * 3; }
  // Pairs: where the half unit's prepared block starts (after the pairs and the odd unit)
  int64_t HalfOffset(int mm) const { return count / 2 * TwoBytes(mm) + count % 2 * Bytes(mm); }
  int64_t RowBytes(int mm) const {
    if constexpr (Pairs) return HalfOffset(mm) + (half ? Bytes(mm) : 0);
    else return count * Bytes(mm);
  }
  Q8Units(int64_t cols, int group)
      : count(Pairs ? cols / Q::kBytes : cols / group),
        vectors(Pairs ? 1 : group / Q::kBytes),
        half(Pairs && cols % Q::kBytes != 0) {}
};

// Whether a row's weight lines are prefetched two units at a time as those units are read
// (Q8MatvecTile), not all at the row's start (Q8MatvecPrepared): for units of one vector without
// Pairs. Interleaved against the row's start over Qwen3-0.6B's decode matrices (1 thread, 2 MB
// pages): AVX-512 group 64 ~2% faster, AVX2 group 32 0-3% faster; Pairs (AVX-512 group 32) and
// AVX2 group 64 (two vectors per unit) 0-3% slower, so those keep the row's start.
template <class Q, bool Pairs>
bool Q8PrefetchPerUnit(const Q8Units<Q, Pairs>& un) {
  return !Pairs && un.vectors == 1;
}

// Where the prepared rows go: tile i0 (rows [i0, i0 + mm)) at prep + i0 · row_bytes.
template <class Q, bool Pairs, int MaxM>
struct Q8RowsShape {
  Q8Units<Q, Pairs> un;
  int64_t row_bytes;
  int tile_rows;
  Q8RowsShape(int64_t cols, int group)
      : un(cols, group), row_bytes(un.RowBytes(1)),
        tile_rows(row_bytes * MaxM > kQ8TileBytes ? (MaxM + 1) / 2 : MaxM) {}
  int Rows(int64_t m, int64_t i0) const { return int((m - i0) < tile_rows ? (m - i0) : tile_rows); }
};

// Lanes of the scales of unit u: Pairs, the first half from s[2u], the second from s[2u + 1].
template <class Q, bool Pairs>
typename Q::FV Q8UnitScales(const float* s, int64_t u) {
  if constexpr (Pairs) return Q::fpair(s + 2 * u);
  else return Q::fset1(s[u]);
}

// Pairs: lane l of Q::combine2(ia of unit 2q, ia of unit 2q + 1) sums two int32 lanes of group
// 4q + kQuadGroup[l] (of its 4 groups; combine2: per 128-bit lane k, [a0+a2, a1+a3, b0+b2, b1+b3]:
// a's lanes are groups 0 (k < 2) and 1, b's groups 2 and 3). Q::fquad(s) sets lane l to s[kQuadGroup[l]].
constexpr int kQuadGroup[16] = {0, 0, 2, 2, 0, 0, 2, 2, 1, 1, 3, 3, 1, 1, 3, 3};

// Row i of X [m, cols] into the prepared tile of mm rows at `tile`, as its row b.
template <class Q, bool Pairs>
void Q8PrepareRow(const Q8Units<Q, Pairs>& un, const int8_t* xi, const float* xsi, int mm, int b, uint8_t* tile) {
  constexpr int L = Q::kBytes / 4;
  const int64_t block = un.Bytes(mm);
  const int64_t x_bytes = int64_t(un.vectors) * mm * Q::kBytes;
  const int64_t unit_bytes = int64_t(un.vectors) * Q::kBytes;
  const uint8_t flip = Q::kBias ? 0x80 : 0;
  int64_t u0 = 0;
  if constexpr (Pairs) {
    static_assert(L == 16, "Pairs: 64-byte vectors");
    for (; u0 + 2 <= un.count; u0 += 2) {
      uint8_t* p = tile + u0 / 2 * un.TwoBytes(mm);
      for (int j = 0; j < 2; ++j) {
        uint8_t* d = p + (int64_t(j) * mm + b) * Q::kBytes;
        const uint8_t* src = reinterpret_cast<const uint8_t*>(xi + (u0 + j) * Q::kBytes);
        for (int e = 0; e < Q::kBytes; ++e) d[e] = src[e] ^ flip;
      }
      float* sl = reinterpret_cast<float*>(p + 2 * mm * Q::kBytes + b * Q::kBytes);
      for (int l = 0; l < L; ++l) sl[l] = xsi[2 * u0 + kQuadGroup[l]];
    }
  }
  for (int64_t u = u0; u < un.count; ++u) {
    uint8_t* p = tile + (Pairs ? u0 / 2 * un.TwoBytes(mm) : u * block);
    for (int j = 0; j < un.vectors; ++j) {
      uint8_t* d = p + (int64_t(j) * mm + b) * Q::kBytes;
      const uint8_t* src = reinterpret_cast<const uint8_t*>(xi + u * unit_bytes + j * Q::kBytes);
      for (int e = 0; e < Q::kBytes; ++e) d[e] = src[e] ^ flip;
    }
    float* sl = reinterpret_cast<float*>(p + x_bytes + b * Q::kBytes);
    for (int l = 0; l < L; ++l) sl[l] = Pairs ? xsi[2 * u + (l < L / 2 ? 0 : 1)] : xsi[u];
  }
  if (Pairs && un.half) {
    // group 2·count: its bytes in the lower half, zeros above; its scale in the lower lanes, 0 above
    uint8_t* p = tile + un.HalfOffset(mm);
    uint8_t* d = p + int64_t(b) * Q::kBytes;
    const uint8_t* src = reinterpret_cast<const uint8_t*>(xi + un.count * Q::kBytes);
    for (int e = 0; e < Q::kBytes; ++e) d[e] = e < Q::kBytes / 2 ? uint8_t(src[e] ^ flip) : uint8_t(0);
    float* sl = reinterpret_cast<float*>(p + (int64_t(mm) + b) * Q::kBytes);
    for (int l = 0; l < L; ++l) sl[l] = l < L / 2 ? xsi[2 * un.count] : 0.0f;
  }
}

template <class Q, bool Pairs, int MaxM>
int64_t Q8RowsPrepBytes(int64_t m, int64_t cols, int group) {
  return m * Q8RowsShape<Q, Pairs, MaxM>(cols, group).row_bytes;
}

// X [m, cols] (xq, xs) into `prep` (Q8RowsPrepBytes bytes).
template <class Q, bool Pairs, int MaxM>
void Q8RowsPrepare(const int8_t* xq, const float* xs, int64_t m, int64_t cols, int group, uint8_t* prep) {
  const Q8RowsShape<Q, Pairs, MaxM> sh(cols, group);
  const int64_t groups = cols / group;
  for (int64_t i0 = 0; i0 < m; i0 += sh.tile_rows) {
    const int mm = sh.Rows(m, i0);
    for (int b = 0; b < mm; ++b)
      Q8PrepareRow<Q, Pairs>(sh.un, xq + (i0 + b) * cols, xs + (i0 + b) * groups, mm, b, prep + i0 * sh.row_bytes);
  }
}

// kBias: -128·Σ of each lane's weight bytes (see above), exact: |Σ| <= 4·128 per dot.
template <class Q>
typename Q::A Q8WeightCorr(typename Q::A acc, typename Q::D w) {
  if constexpr (Q::kBias) return Q::wcorr(acc, w);
  else return acc;
}

// One weight row (w, its scales ws) against the mm = M prepared rows at xt; row b's result at y[b · ldy].
template <class Q, bool Pairs, int M>
[[gnu::always_inline]] inline void Q8MatvecTile(const int8_t* w, const float* ws, const uint8_t* xt,
                                                const Q8Units<Q, Pairs>& un, float* y, int64_t ldy) {
  using A = typename Q::A;
  using FV = typename Q::FV;
  const int64_t block = un.Bytes(M);
  const int64_t s_off = int64_t(un.vectors) * M * Q::kBytes;
  const int64_t unit_bytes = int64_t(un.vectors) * Q::kBytes;
  FV acc[2][M];  // [chain][row]
  for (int c = 0; c < 2; ++c)
    for (int b = 0; b < M; ++b) acc[c][b] = Q::fzero();
  // Unit u with its prepared block at p.
  auto unit_at = [&](int64_t u, const uint8_t* p, auto chain) {
    const int8_t* wu = w + u * unit_bytes;
    A ia[M];
    auto vec = [&](int j) {
      const typename Q::D wd = Q::ld(wu + j * Q::kBytes);
      if constexpr (Q::kBias) {
        for (int b = 0; b < M; ++b) ia[b] = Q::dot_xw(ia[b], Q::ld(p + (int64_t(j) * M + b) * Q::kBytes), wd);
      } else {
        const auto wv = Q::prep_raw(wd);
        for (int b = 0; b < M; ++b) ia[b] = Q::dot(ia[b], wv, Q::ld(p + (int64_t(j) * M + b) * Q::kBytes));
      }
    };
    // The rows' starting value: the weights' correction (kBias), else 0.
    A corr = Q::acc_zero();
    if constexpr (Q::kBias) {
      if (Pairs || un.vectors == 1) corr = Q8WeightCorr<Q>(corr, Q::ld(wu));
      else
        for (int j = 0; j < un.vectors; ++j) corr = Q8WeightCorr<Q>(corr, Q::ld(wu + j * Q::kBytes));
    }
    for (int b = 0; b < M; ++b) ia[b] = corr;
    // One vector per unit (Pairs always) without the loop: GCC otherwise copies every int32
    // sum to another register and back around it.
    if (Pairs || un.vectors == 1) vec(0);
    else
      for (int j = 0; j < un.vectors; ++j) vec(j);
    const FV wsu = Q8UnitScales<Q, Pairs>(ws, u);
    for (int b = 0; b < M; ++b)
      acc[chain][b] = Q::ffma(Q::cvt(ia[b]),
                              Q::fmul(wsu, Q::fld(reinterpret_cast<const float*>(p + s_off + b * Q::kBytes))),
                              acc[chain][b]);
  };
  auto unit = [&](int64_t u, auto chain) { unit_at(u, xt + u * block, chain); };
  if constexpr (Pairs) {
    // Two units at a time: their int32 lanes of one group summed two by two (combine2) before the
    // float side, which then runs once per two units (a third of the multiplies per weight byte).
    const int64_t two = un.TwoBytes(M);
    auto units2 = [&](int64_t q, auto chain) {
      const uint8_t* p = xt + q * two;
      const int8_t* wu = w + q * 2 * Q::kBytes;
      const typename Q::D w0 = Q::ld(wu), w1 = Q::ld(wu + Q::kBytes);
      const A c0 = Q8WeightCorr<Q>(Q::acc_zero(), w0), c1 = Q8WeightCorr<Q>(Q::acc_zero(), w1);
      const FV wsq = Q::fquad(ws + 4 * q);
      auto rows = [&](const auto& v0, const auto& v1) {
        for (int b = 0; b < M; ++b) {
          A i0 = c0, i1 = c1;
          if constexpr (Q::kBias) {
            i0 = Q::dot_xw(i0, Q::ld(p + b * Q::kBytes), v0);
            i1 = Q::dot_xw(i1, Q::ld(p + (M + b) * Q::kBytes), v1);
          } else {
            i0 = Q::dot(i0, v0, Q::ld(p + b * Q::kBytes));
            i1 = Q::dot(i1, v1, Q::ld(p + (M + b) * Q::kBytes));
          }
          acc[chain][b] = Q::ffma(Q::cvt(Q::combine2(i0, i1)),
                                  Q::fmul(wsq, Q::fld(reinterpret_cast<const float*>(p + (2 * M + b) * Q::kBytes))),
                                  acc[chain][b]);
        }
      };
      if constexpr (Q::kBias) rows(w0, w1);
      else rows(Q::prep_raw(w0), Q::prep_raw(w1));
    };
    int64_t q = 0;
    for (; q + 2 <= un.count / 2; q += 2) {
      units2(q, std::integral_constant<int, 0>());
      units2(q + 1, std::integral_constant<int, 1>());
    }
    if (q < un.count / 2) units2(q, std::integral_constant<int, 0>());
    // the odd last unit alone, after the pairs (Q8PrepareRow's layout)
    if (un.count % 2) unit_at(un.count - 1, xt + un.count / 2 * two, std::integral_constant<int, 1>());
    if (un.half) {
      // The last group g = 2·count alone. Weights: [32 bytes of w, 32 zeros] (ld_half), so lanes
      // [8, 16) of every ia are 0 (kBias: the correction of zero bytes is 0 as well, and x's upper
      // bytes, prepared 0, meet zero weights). Prepared block at p: x [M][kBytes], xscale [M][16]
      // (lanes [8, 16) 0). Scales: w_s[g] broadcast; the zero lanes add 0 to the first chain.
      const uint8_t* p = xt + un.HalfOffset(M);
      const typename Q::D wd = Q::ld_half(w + un.count * Q::kBytes);
      const FV wsg = Q::fset1(ws[2 * un.count]);
      const A corr = Q8WeightCorr<Q>(Q::acc_zero(), wd);
      A ia[M];
      if constexpr (Q::kBias) {
        for (int b = 0; b < M; ++b) ia[b] = Q::dot_xw(corr, Q::ld(p + b * Q::kBytes), wd);
      } else {
        const auto wv = Q::prep_raw(wd);
        for (int b = 0; b < M; ++b) ia[b] = Q::dot(corr, wv, Q::ld(p + b * Q::kBytes));
      }
      for (int b = 0; b < M; ++b)
        acc[0][b] = Q::ffma(Q::cvt(ia[b]), Q::fmul(wsg, Q::fld(reinterpret_cast<const float*>(p + (M + b) * Q::kBytes))),
                            acc[0][b]);
    }
  } else {
    int64_t u = 0;
    const bool per_unit = Q8PrefetchPerUnit(un);
    for (; u + 2 <= un.count; u += 2) {
      if (per_unit) PrefetchAhead(w + u * unit_bytes, 2 * unit_bytes);
      unit(u, std::integral_constant<int, 0>());
      unit(u + 1, std::integral_constant<int, 1>());
    }
    if (u < un.count) {
      if (per_unit) PrefetchAhead(w + u * unit_bytes, unit_bytes);
      unit(u, std::integral_constant<int, 0>());
    }
  }
  // a·1 + b: the exact sum rounded once (the traits have no plain vector add)
  for (int b = 0; b < M; ++b) y[b * ldy] = Q::freduce(Q::ffma(acc[0][b], Q::fset1(1.0f), acc[1][b]));
}

template <class Q, bool Pairs, int M>
void Q8MatvecTileAny(int mm, const int8_t* w, const float* ws, const uint8_t* xt, const Q8Units<Q, Pairs>& un,
                     float* y, int64_t ldy) {
  if constexpr (M > 1) {
    if (mm < M) return Q8MatvecTileAny<Q, Pairs, M - 1>(mm, w, ws, xt, un, y, ldy);
  }
  Q8MatvecTile<Q, Pairs, M>(w, ws, xt, un, y, ldy);
}

// Rows [r0, r1) of Y [m, ldy] = X [m, cols] · Wᵀ from X prepared by Q8RowsPrepare (same m, cols,
// group). MaxM: activation rows per tile (as many as the registers hold).
template <class Q, bool Pairs, int MaxM>
void Q8MatvecPrepared(const int8_t* wq, const float* ws, const uint8_t* prep, float* y, int64_t m, int64_t cols,
                      int64_t ldy, int group, int64_t r0, int64_t r1) {
  if (r1 <= r0 || m <= 0) return;
  const Q8RowsShape<Q, Pairs, MaxM> sh(cols, group);
  const int64_t groups = cols / group;
  const int64_t scale_rows_ahead = kPrefetchAheadBytes / cols + 1;  // the scales' rows ahead
  for (int64_t r = r0; r < r1; ++r) {
    if (!Q8PrefetchPerUnit(sh.un)) PrefetchAhead(wq + r * cols, cols);
    if (r + scale_rows_ahead < r1) PrefetchLines(ws + (r + scale_rows_ahead) * groups, groups * int64_t(sizeof(float)));
    if (m == 1) {  // decode: the one-row tile inlined into the row loop
      Q8MatvecTile<Q, Pairs, 1>(wq + r * cols, ws + r * groups, prep, sh.un, y + r, ldy);
      continue;
    }
    for (int64_t i0 = 0; i0 < m; i0 += sh.tile_rows)
      Q8MatvecTileAny<Q, Pairs, MaxM>(sh.Rows(m, i0), wq + r * cols, ws + r * groups, prep + i0 * sh.row_bytes,
                                      sh.un, y + i0 * ldy + r, ldy);
  }
}

// Rows [r0, r1) of Y [m, ldy] = X [m, cols] · Wᵀ (m = 1: matvec_q8's y), as described above.
template <class Q, bool Pairs, int MaxM>
void Q8MatvecRows(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y, int64_t m,
                  int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1) {
  if (r1 <= r0 || m <= 0) return;
  uint8_t* prep = static_cast<uint8_t*>(Scratch(kScratchA, size_t(Q8RowsPrepBytes<Q, Pairs, MaxM>(m, cols, group))));
  Q8RowsPrepare<Q, Pairs, MaxM>(xq, xs, m, cols, group, prep);
  Q8MatvecPrepared<Q, Pairs, MaxM>(wq, ws, prep, y, m, cols, ldy, group, r0, r1);
}

// The split form for the shapes a table's tiles do not take: X kept as it is (scalar::
// q8_rows_prepare's copy) and each row through the table's own matvec_q8.
template <auto Matvec>
void Q8PreparedEachRow(const int8_t* wq, const float* ws, const uint8_t* prep, float* y, int64_t m, int64_t cols,
                       int64_t ldy, int group, int64_t r0, int64_t r1) {
  const int8_t* xq = reinterpret_cast<const int8_t*>(prep);
  const float* xs = reinterpret_cast<const float*>(prep + Q8CopyScalesOffset(m, cols));
  for (int64_t i = 0; i < m; ++i) Matvec(wq, ws, xq + i * cols, xs + i * (cols / group), y + i * ldy, cols, group, r0, r1);
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
