// Register-blocked f32-accumulating gemm bodies shared by the SIMD files. This header is included
// INSIDE an anonymous namespace of an *_<isa>.cc file, after the intrinsics headers and a vector
// traits struct F, so each file gets its own internal copy built with its own flags:
//
//   struct F {
//     using V = ...;  static constexpr int W = lanes;
//     static V zero(); static V set1(float);
//     static V ld(const float*); static V ld(const uint16_t*);                  // W elements (f16 widened)
//     static V ld_part(const float*, int n); static V ld_part(const uint16_t*, int n);  // n < W, rest 0
//     static void st(float*, V); static void st_part(float*, V, int n);
//     static V fma(V a, V b, V c);  // a·b + c
//     static V add(V a, V b);
//     static float reduce(V);
//     static constexpr int kTransNB, kTransMB;  // hgemm_trans tile (1 < m < kTransPanelRows): B rows × A rows
//     static constexpr int kOuterMB, kOuterNV;  // gemm tile (m > 1): A rows × vectors of C columns
//   };
#pragma once

// hgemm: rows of B per packed panel. 256 rows of the AVX-512 tile's 32 columns are 32 KB of f32
// (L1 holds 48 KB on the cores measured); every k-block re-reads and re-writes the C strip, so
// fewer blocks: 4-5% more GFLOP/s than 128 on 729 × 1152 × 3456..4304 (vision shapes).
constexpr int64_t kGemmKBlock = 256;
constexpr int64_t kGemmTransBlockBytes = 256 << 10;  // hgemm_trans tiles: bytes of B rows per block (L2)
// hgemm_trans through the panels from this many rows of A on: below, the transposing pack of f16
// B (scalar stores down the panel's columns) costs more than the tiles' per-load conversion.
// 1-thread CPU-time GMAC/s on AVX-512, panels vs tiles: m 64 k 1024: 47-56 vs 74-82; m 64 k 8192:
// 43-47 vs 76-82; m 256 k 2048: 81-86 vs 91-94; m 740 k 2048: 88-98 vs 82-89; m 740 k 8192:
// 93-97 vs 50-54. f32 B (sgemm_trans) has no conversion to save and always takes the panels
// (m 64: 53 vs 38; m 740: 89-91 vs 25-37).
constexpr int64_t kTransPanelRows = 512;
// sgemm_trans through the tiles below this many rows (a decode step's stacked query heads against
// the keys of a KV cache): packing B costs a pass over it that few rows of FMAs do not repay.
constexpr int64_t kTransPanelRowsF32 = 16;
// f16 B with rows this short takes the panels from kTransPanelRowsF32 rows of A on too: a tile's
// horizontal sums per output (one per NB×MB outputs at the end of k) cost as much as its FMAs over
// k = 128 (attention's scores against the keys of a head in a prefill: m 64 k 128 n 512, 1 thread
// CPU time, tiles 83 GFLOP/s, panels 150).
constexpr int64_t kTransShortRow = 256;

inline int64_t MinI64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t MaxI64(int64_t a, int64_t b) { return a > b ? a : b; }

// ---- hgemm_trans with few rows: C = A·Bᵀ, B [n, k]: NB rows of B against MB rows of A, vectors
// along k, one reduction per output at the end.
template <class BT, int NB, int MB>
void TransTile(const float* a, int64_t lda, const BT* b, float* c, int64_t k, int64_t n, int64_t i0, int64_t j0) {
  using V = typename F::V;
  constexpr int W = F::W;
  V acc[NB][MB];
  for (int x = 0; x < NB; ++x)
    for (int y = 0; y < MB; ++y) acc[x][y] = F::zero();
  const float* ap[MB];
  const BT* bp[NB];
  for (int y = 0; y < MB; ++y) ap[y] = a + (i0 + y) * lda;
  for (int x = 0; x < NB; ++x) bp[x] = b + (j0 + x) * k;
  int64_t p = 0;
  for (; p + W <= k; p += W) {
    V av[MB];
    for (int y = 0; y < MB; ++y) av[y] = F::ld(ap[y] + p);
    for (int x = 0; x < NB; ++x) {
      const V bv = F::ld(bp[x] + p);
      for (int y = 0; y < MB; ++y) acc[x][y] = F::fma(bv, av[y], acc[x][y]);
    }
  }
  if (p < k) {
    const int rest = int(k - p);
    V av[MB];
    for (int y = 0; y < MB; ++y) av[y] = F::ld_part(ap[y] + p, rest);
    for (int x = 0; x < NB; ++x) {
      const V bv = F::ld_part(bp[x] + p, rest);
      for (int y = 0; y < MB; ++y) acc[x][y] = F::fma(bv, av[y], acc[x][y]);
    }
  }
  for (int x = 0; x < NB; ++x)
    for (int y = 0; y < MB; ++y) c[(i0 + y) * n + j0 + x] = F::reduce(acc[x][y]);
}

// Runs the NB×MB tile, or the largest smaller one that fits nb ≤ NB, mb ≤ MB.
template <class BT, int NB, int MB>
void TransTileAny(int nb, int mb, const float* a, int64_t lda, const BT* b, float* c, int64_t k, int64_t n,
                  int64_t i0, int64_t j0) {
  if constexpr (NB > 1) {
    if (nb < NB) return TransTileAny<BT, NB - 1, MB>(nb, mb, a, lda, b, c, k, n, i0, j0);
  }
  if constexpr (MB > 1) {
    if (mb < MB) return TransTileAny<BT, NB, MB - 1>(nb, mb, a, lda, b, c, k, n, i0, j0);
  }
  TransTile<BT, NB, MB>(a, lda, b, c, k, n, i0, j0);
}

// ---- Decode (m == 1) reads every weight once, and in address order: several rows interleaved
// in short pieces defeat the hardware prefetchers (measured 3-4 GB/s instead of 12+ from DRAM).
// One row of B [k] against a, four accumulators along k, its lines prefetched ahead as they are read
// (AVX2's f16 matvec: 84% -> 96% of a read of the same bytes, scripts/bench/kernel-ab.js, 1.17x).
template <class BT>
float DecodeRowDot(const float* a, const BT* row, int64_t k) {
  using V = typename F::V;
  constexpr int W = F::W;
  V s0 = F::zero(), s1 = F::zero(), s2 = F::zero(), s3 = F::zero();
  int64_t p = 0;
  for (; p + 4 * W <= k; p += 4 * W) {
    PrefetchAhead(row + p, 4 * W * int64_t(sizeof(BT)));
    s0 = F::fma(F::ld(row + p), F::ld(a + p), s0);
    s1 = F::fma(F::ld(row + p + W), F::ld(a + p + W), s1);
    s2 = F::fma(F::ld(row + p + 2 * W), F::ld(a + p + 2 * W), s2);
    s3 = F::fma(F::ld(row + p + 3 * W), F::ld(a + p + 3 * W), s3);
  }
  for (; p + W <= k; p += W) s0 = F::fma(F::ld(row + p), F::ld(a + p), s0);
  if (p < k) s1 = F::fma(F::ld_part(row + p, int(k - p)), F::ld_part(a + p, int(k - p)), s1);
  return F::reduce(F::add(F::add(s0, s1), F::add(s2, s3)));
}

// Rows [0, M) of C [M, n], columns [n0, n1) = A [M, k] · B for B [k, n]: rows of B four at a
// time, each row's slice read in order and once for the M rows of A (decode's m = 1, and the few
// query heads of attention's P·V in a decode step).
template <class BT, int M>
void DecodeRows(const float* a, const BT* b, float* c, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  using V = typename F::V;
  constexpr int W = F::W;
  for (int y = 0; y < M; ++y)
    for (int64_t j = n0; j < n1; ++j) c[y * n + j] = 0.0f;
  for (int64_t p = 0; p < k; p += 4) {
    const int rows = int(MinI64(4, k - p));
    const BT* r0 = b + p * n;
    V av[M][4];
    for (int y = 0; y < M; ++y)
      for (int q = 0; q < 4; ++q) av[y][q] = F::set1(q < rows ? a[y * k + p + q] : 0.0f);
    int64_t j = n0;
    if (rows == 4) {
      for (; j + W <= n1; j += W) {
        const V b0 = F::ld(r0 + j), b1 = F::ld(r0 + n + j), b2 = F::ld(r0 + 2 * n + j), b3 = F::ld(r0 + 3 * n + j);
        for (int y = 0; y < M; ++y) {
          V acc = F::fma(av[y][0], b0, F::ld(c + y * n + j));
          acc = F::fma(av[y][1], b1, acc);
          acc = F::fma(av[y][2], b2, acc);
          F::st(c + y * n + j, F::fma(av[y][3], b3, acc));
        }
      }
    }
    for (; j < n1; j += W) {  // the last columns, or the last 1-3 rows
      const int w = int(MinI64(W, n1 - j));
      for (int y = 0; y < M; ++y) {
        V acc = F::ld_part(c + y * n + j, w);
        for (int q = 0; q < rows; ++q) acc = F::fma(av[y][q], F::ld_part(r0 + q * n + j, w), acc);
        F::st_part(c + y * n + j, acc, w);
      }
    }
  }
}

// ---- m > 1: packed panels. The k-block p0:p1 of output columns j:j+CW of B (a strip of rows of
// B [k, n], or a block of rows of B [n, k] transposed) is widened once into a contiguous f32
// panel that stays in L1 (rows of B lie n or k elements apart, and with a multiple of 1024 a strip
// of them would fall into a couple of cache sets), and A[:, p0:p1] into MB-row panels; every B
// element is converted exactly once per call, so the tile's inner loop is pure FMA.
template <int MB, int NV>
void PanelTile(const float* ap, const float* bp, int64_t kc, float* c, int64_t n, int64_t i0, int rows,
               int64_t j0, int cols, bool first) {
  using V = typename F::V;
  constexpr int W = F::W;
  constexpr int CW = NV * W;
  V acc[MB][NV];
  for (int y = 0; y < MB; ++y)
    for (int v = 0; v < NV; ++v) acc[y][v] = F::zero();
  for (int64_t p = 0; p < kc; ++p, ap += MB, bp += CW) {
    V bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = F::ld(bp + v * W);
    for (int y = 0; y < MB; ++y) {
      const V av = F::set1(ap[y]);
      for (int v = 0; v < NV; ++v) acc[y][v] = F::fma(av, bv[v], acc[y][v]);
    }
  }
  for (int y = 0; y < MB && y < rows; ++y)
    for (int v = 0; v < NV && v * W < cols; ++v) {
      float* cp = c + (i0 + y) * n + j0 + v * W;
      const int left = cols - v * W;
      if (left >= W) F::st(cp, first ? acc[y][v] : F::add(acc[y][v], F::ld(cp)));
      else F::st_part(cp, first ? acc[y][v] : F::add(acc[y][v], F::ld_part(cp, left)), left);
    }
}

// The m > 1 driver: pack_b(p0, kc, j, cols, bpack) fills bpack [kc][CW] with B[p0:p0+kc, j:j+cols]
// as f32, columns past cols 0.
template <class PackB>
void PanelGemm(const float* a, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1, const PackB& pack_b) {
  constexpr int MB = F::kOuterMB, NV = F::kOuterNV, W = F::W, CW = NV * W;
  const int64_t tiles = (m + MB - 1) / MB;
  const int64_t kc_max = MinI64(kGemmKBlock, MaxI64(k, 1));
  float* apack = static_cast<float*>(Scratch(kScratchA, sizeof(float) * size_t(tiles * MB * kc_max)));
  float* bpack = static_cast<float*>(Scratch(kScratchB, sizeof(float) * size_t(kc_max * CW)));
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = n0; j < n1; ++j) c[i * n + j] = 0.0f;
    return;
  }
  for (int64_t p0 = 0; p0 < k; p0 += kGemmKBlock) {
    const int64_t kc = MinI64(kGemmKBlock, k - p0);
    for (int64_t t = 0; t < tiles; ++t)  // apack [tile][p][MB], rows past m are 0
      for (int64_t p = 0; p < kc; ++p)
        for (int y = 0; y < MB; ++y) {
          const int64_t i = t * MB + y;
          apack[(t * kc + p) * MB + y] = i < m ? a[i * k + p0 + p] : 0.0f;
        }
    for (int64_t j = n0; j < n1; j += CW) {
      const int cols = int(MinI64(CW, n1 - j));
      pack_b(p0, kc, j, cols, bpack);
      for (int64_t t = 0; t < tiles; ++t)
        PanelTile<MB, NV>(apack + t * kc * MB, bpack, kc, c, n, t * MB, int(MinI64(MB, m - t * MB)), j, cols, p0 == 0);
    }
  }
}

// B [k, n]: each panel row is a contiguous piece of a row of B.
template <class BT>
void PackedGemm(const float* a, const BT* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  constexpr int NV = F::kOuterNV, W = F::W, CW = NV * W;
  PanelGemm(a, c, m, k, n, n0, n1, [&](int64_t p0, int64_t kc, int64_t j, int cols, float* bpack) {
    for (int64_t p = 0; p < kc; ++p) {
      const BT* row = b + (p0 + p) * n + j;
      for (int v = 0; v < NV; ++v) {
        const int left = cols - v * W;
        F::st(bpack + p * CW + v * W, left >= W ? F::ld(row + v * W) : left > 0 ? F::ld_part(row + v * W, left) : F::zero());
      }
    }
  });
}

// B [n, k] (C = A·Bᵀ): each panel column is a contiguous piece of a row of B, widened W at a time
// and written down the column; the transpose costs one pass over B against m rows of FMAs.
template <class BT>
void PackedGemmTrans(const float* a, const BT* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  constexpr int W = F::W, CW = F::kOuterNV * W;
  PanelGemm(a, c, m, k, n, n0, n1, [&](int64_t p0, int64_t kc, int64_t j, int cols, float* bpack) {
    alignas(64) float piece[W];
    for (int x = 0; x < CW; ++x) {
      if (x >= cols) {
        for (int64_t p = 0; p < kc; ++p) bpack[p * CW + x] = 0.0f;
        continue;
      }
      const BT* row = b + (j + x) * k + p0;
      for (int64_t p = 0; p < kc; p += W) {
        const int w = int(MinI64(W, kc - p));
        F::st(piece, w == W ? F::ld(row + p) : F::ld_part(row + p, w));
        for (int l = 0; l < w; ++l) bpack[(p + l) * CW + x] = piece[l];
      }
    }
  });
}

template <class BT>
void GemmTrans(const float* a, const BT* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  if (m == 1) {
    for (int64_t j = n0; j < n1; ++j) c[j] = DecodeRowDot(a, b + j * k, k);
    return;
  }
  if (m >= (sizeof(BT) == sizeof(float) || k <= kTransShortRow ? kTransPanelRowsF32 : kTransPanelRows))
    return PackedGemmTrans<BT>(a, b, c, m, k, n, n0, n1);
  // Few rows of A: tiles of NB rows of B (converted as they are loaded) against MB rows of A.
  constexpr int NB = F::kTransNB, MB = F::kTransMB;
  // A copy of A whose rows are not 4 KiB apart (rows of a power-of-two length share L1 sets
  // with each other and with the rows of B).
  const int64_t lda = ((k + 15) & ~int64_t(15)) + 16;
  float* ac = static_cast<float*>(Scratch(kScratchA, sizeof(float) * size_t(m * lda)));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) ac[i * lda + p] = a[i * k + p];
  // A block of B rows stays in L2 while every row tile of A passes over it.
  const int64_t row_bytes = MaxI64(1, k * int64_t(sizeof(BT)));
  const int64_t jb = MaxI64(NB, (kGemmTransBlockBytes / row_bytes) / NB * NB);
  for (int64_t jb0 = n0; jb0 < n1; jb0 += jb) {
    const int64_t jb1 = MinI64(n1, jb0 + jb);
    for (int64_t i = 0; i < m; i += MB)
      for (int64_t j = jb0; j < jb1; j += NB)
        TransTileAny<BT, NB, MB>(int(MinI64(NB, jb1 - j)), int(MinI64(MB, m - i)), ac, lda, b, c, k, n, i, j);
  }
}

template <class BT>
void Gemm(const float* a, const BT* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  // Up to 4 rows of A: B streamed once (panels padded to kOuterMB rows would waste most FMAs and
  // repack B; attention's P·V in a decode step, m 2 k 4096 n 128 f16, 1 thread CPU time: 61 µs in
  // panels, 28 µs as two m = 1 calls).
  switch (m) {
    case 1: return DecodeRows<BT, 1>(a, b, c, k, n, n0, n1);
    case 2: return DecodeRows<BT, 2>(a, b, c, k, n, n0, n1);
    case 3: return DecodeRows<BT, 3>(a, b, c, k, n, n0, n1);
    case 4: return DecodeRows<BT, 4>(a, b, c, k, n, n0, n1);
    default: return PackedGemm<BT>(a, b, c, m, k, n, n0, n1);
  }
}

// ---- Level-1 helpers.
inline float DotF32(const float* a, const float* b, int64_t n) {
  using V = typename F::V;
  constexpr int W = F::W;
  V s0 = F::zero(), s1 = F::zero(), s2 = F::zero(), s3 = F::zero();
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    s0 = F::fma(F::ld(a + i), F::ld(b + i), s0);
    s1 = F::fma(F::ld(a + i + W), F::ld(b + i + W), s1);
    s2 = F::fma(F::ld(a + i + 2 * W), F::ld(b + i + 2 * W), s2);
    s3 = F::fma(F::ld(a + i + 3 * W), F::ld(b + i + 3 * W), s3);
  }
  for (; i + W <= n; i += W) s0 = F::fma(F::ld(a + i), F::ld(b + i), s0);
  if (i < n) s1 = F::fma(F::ld_part(a + i, int(n - i)), F::ld_part(b + i, int(n - i)), s1);
  return F::reduce(F::add(F::add(s0, s1), F::add(s2, s3)));
}

inline void AxpyF32(float alpha, const float* x, float* y, int64_t n) {
  using V = typename F::V;
  constexpr int W = F::W;
  const V av = F::set1(alpha);
  int64_t i = 0;
  for (; i + W <= n; i += W) F::st(y + i, F::fma(av, F::ld(x + i), F::ld(y + i)));
  if (i < n) F::st_part(y + i, F::fma(av, F::ld_part(x + i, int(n - i)), F::ld_part(y + i, int(n - i))), int(n - i));
}
