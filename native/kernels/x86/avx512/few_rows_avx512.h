// The gemms with 1 to 4 rows of A on AVX-512 (included INSIDE the anonymous namespace of
// kernels_avx512.cc, after F): a decode step's attention, the stacked query heads of one KV head
// against its keys and values. Memory-bound: B is read once, in address order, each vector
// converted once for all m rows.
//
// TransRows (hgemm_trans, sgemm_trans): S [m, n] = A [m, k] · Bᵀ, B [n, k] (k = head_dim, n = positions).
// 16 keys at a time, one key row after the other: per key and row of A one vector accumulator
// along k (FMAs in order of p; four chains for a long key, see kTransRowsSplitVectors), then the 16 accumulators of a row are reduced across lanes
// together: four keys to one vector of [4 partial sums] per 128-bit lane (Reduce4), four of
// those to one vector of the 16 sums (Reduce16). Against a horizontal sum per output (the 4×MB
// tiles of gemm_tiles.h: 8 shuffle+add pairs each, for every output) that is 2 per output.
// Every output's arithmetic is the same whatever its place among the 16 (the shuffles pair lanes
// symmetrically), and a last group of fewer keys repeats its last key in the missing places and
// stores only its own lanes: so an output does not depend on n0, n1 (the threaded split).
#pragma once

// Prefetch (PrefetchAhead): the hardware prefetchers ramp up anew on each head's short stream
// (n · k · 2 bytes: 128 KB at 512 positions), so every key's lines are prefetched, within its head
// (PrefetchAheadBefore); prefetching a head's first 4 KB on entry measured no better. A short key's
// lines go at its start, a long key's (a weight row of an f16 matvec) four vectors at a time as they
// are read: at its start, a 2048-value f16 row's 64 prefetches stalled on the full miss buffers
// (scripts/bench/kernel-ab.js, f16: 89-90% -> 98% of a read of the same bytes, 1.09-1.10x).

// Keys of at least this many vectors (k >= 512) are summed in four chains (TransRows).
constexpr int64_t kTransRowsSplitVectors = 32;

inline __m512 TransRowsLoad(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 TransRowsLoad(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 TransRowsLoadPart(const float* p, __mmask16 mk) { return _mm512_maskz_loadu_ps(mk, p); }
inline __m512 TransRowsLoadPart(const uint16_t* p, __mmask16 mk) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, p));
}

// B's rows as TransRowsFixed and OuterRows read them: Values<BT> for f32 or f16 values; Q8Values
// for a q8_0 KV cache's int8 rows with one f32 scale per 32 values (the cache's group at head_dim
// 64 and 128), widened in registers to exactly what widen_q8 writes, float(q) · s.
template <class BT>
struct Values {
  const BT* b;
  int64_t len;  // values per row
  struct Row {
    const BT* p;
  };
  Row At(int64_t r) const { return {b + r * len}; }
  // 16 values of row r from column i; LoadPart the lanes of mk, zero elsewhere.
  static __m512 Load(Row r, int64_t i) { return TransRowsLoad(r.p + i); }
  static __m512 LoadPart(Row r, int64_t i, __mmask16 mk) { return TransRowsLoadPart(r.p + i, mk); }
  // The lines `count` values from column i of row r will read kPrefetchAheadBytes later, not past
  // row `end_row`.
  void Prefetch(Row r, int64_t i, int64_t count, int64_t end_row) const {
    PrefetchAheadBefore(r.p + i, count * int64_t(sizeof(BT)), b + end_row * len);
  }
};

struct Q8Values {
  const int8_t* q;
  const float* s;  // [rows, len / 32]
  int64_t len;     // values per row, a multiple of 32
  struct Row {
    const int8_t* q;
    const float* s;
  };
  Row At(int64_t r) const { return {q + r * len, s + r * (len / 32)}; }
  // i: a multiple of 16, so the 16 values share one scale.
  static __m512 Load(Row r, int64_t i) {
    const __m512 x = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r.q + i))));
    return _mm512_mul_ps(x, _mm512_set1_ps(r.s[i / 32]));
  }
  static __m512 LoadPart(Row r, int64_t i, __mmask16 mk) {
    if (!mk) return _mm512_setzero_ps();  // i may be past the row: its scale is not there
    const __m512 x = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mk, r.q + i)));
    return _mm512_mul_ps(x, _mm512_set1_ps(r.s[i / 32]));
  }
  void Prefetch(Row r, int64_t i, int64_t count, int64_t end_row) const {
    PrefetchAheadBefore(r.q + i, count, q + end_row * len);
    PrefetchAheadBefore(r.s + i / 32, count / 8, s + end_row * (len / 32));  // 4 bytes of scale per 32 values
  }
};

// Per 128-bit lane l: [Σ a, Σ b, Σ c, Σ d] over the 4 floats of lane l, each as (x0 + x2) + (x1 + x3).
inline __m512 Reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));  // a0+a2 b0+b2 a1+a3 b1+b3
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  return _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xEE));
}

// Lanes 4q..4q+3: the 4 sums of u_q over its four 128-bit lanes L, each as (L0 + L2) + (L1 + L3).
inline __m512 Reduce16(__m512 u0, __m512 u1, __m512 u2, __m512 u3) {
  const __m512 w01 = _mm512_add_ps(_mm512_shuffle_f32x4(u0, u1, 0x44), _mm512_shuffle_f32x4(u0, u1, 0xEE));
  const __m512 w23 = _mm512_add_ps(_mm512_shuffle_f32x4(u2, u3, 0x44), _mm512_shuffle_f32x4(u2, u3, 0xEE));
  return _mm512_add_ps(_mm512_shuffle_f32x4(w01, w23, 0x88), _mm512_shuffle_f32x4(w01, w23, 0xDD));
}

// Rows [0, M) of C [M, n], columns [n0, n1) = A [M, k] · B [n, k]ᵀ.
template <class BT, int M>
void TransRows(const float* a, const BT* b, float* c, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  const int64_t kv = k / 16;  // whole vectors along k
  const int rest = int(k % 16);
  const __mmask16 rest_mask = __mmask16((1u << rest) - 1u);
  const char* end = reinterpret_cast<const char*>(b + n1 * k);
  // The sums of key j against every row: one vector per row, lanes along k.
  auto key = [&](int64_t j, __m512* acc) {
    const BT* row = b + j * k;
    // A short key's (a head's) lines all at its start, a long key's (a weight row's) as its
    // vectors are read, below.
    if (kv < kTransRowsSplitVectors) PrefetchAheadBefore(row, k * int64_t(sizeof(BT)), end);
    for (int y = 0; y < M; ++y) acc[y] = _mm512_setzero_ps();
    int64_t v = 0;
    if (kv >= kTransRowsSplitVectors) {
      // A long key (a weight row of an f16 matvec): four chains, vector v into chain v % 4, then
      // (c0 + c1) + (c2 + c3). One chain of kv FMAs is kv · 4 cycles of latency, and a key's loop
      // is longer than the reorder window, so the next key's chain cannot overlap it.
      __m512 part[M][4];
      for (int y = 0; y < M; ++y)
        for (int u = 0; u < 4; ++u) part[y][u] = _mm512_setzero_ps();
      for (; v + 4 <= kv; v += 4) {
        PrefetchAhead(row + v * 16, 64 * int64_t(sizeof(BT)));
        for (int u = 0; u < 4; ++u) {
          const __m512 bv = TransRowsLoad(row + (v + u) * 16);
          for (int y = 0; y < M; ++y)
            part[y][u] = _mm512_fmadd_ps(bv, _mm512_loadu_ps(a + y * k + (v + u) * 16), part[y][u]);
        }
      }
      for (int y = 0; y < M; ++y)
        acc[y] = _mm512_add_ps(_mm512_add_ps(part[y][0], part[y][1]), _mm512_add_ps(part[y][2], part[y][3]));
    }
    for (; v < kv; ++v) {
      const __m512 bv = TransRowsLoad(row + v * 16);
      for (int y = 0; y < M; ++y) acc[y] = _mm512_fmadd_ps(bv, _mm512_loadu_ps(a + y * k + v * 16), acc[y]);
    }
    if (rest) {
      const __m512 bv = TransRowsLoadPart(row + kv * 16, rest_mask);
      for (int y = 0; y < M; ++y) acc[y] = _mm512_fmadd_ps(bv, _mm512_maskz_loadu_ps(rest_mask, a + y * k + kv * 16), acc[y]);
    }
  };
  for (int64_t j0 = n0; j0 < n1; j0 += 16) {
    const int64_t last = (n1 - j0 < 16 ? n1 - j0 : 16) - 1;  // keys past it repeat it
    __m512 quad[4][M];  // [group of 4 keys][row]
    for (int g = 0; g < 4; ++g) {
      __m512 s[4][M];
      for (int x = 0; x < 4; ++x) key(j0 + (4 * g + x < last ? 4 * g + x : last), s[x]);
      for (int y = 0; y < M; ++y) quad[g][y] = Reduce4(s[0][y], s[1][y], s[2][y], s[3][y]);
    }
    const __mmask16 store = last == 15 ? __mmask16(0xffff) : __mmask16((1u << (last + 1)) - 1u);
    for (int y = 0; y < M; ++y)
      _mm512_mask_storeu_ps(c + y * n + j0, store, Reduce16(quad[0][y], quad[1][y], quad[2][y], quad[3][y]));
  }
}

// TransRows for k = 16·KV (head_dim 64, 128) and M <= 2: A's M·KV vectors held in registers
// for all n keys and every loop unrolled (the general loop over k reloads A per key and keeps
// the sums on the stack); the same FMAs in the same order, so the same results bit for bit.
// B: a row source (Values, Q8Values) of rows of k values.
template <class Rows, int M, int KV>
void TransRowsFixed(const float* a, const Rows& b, float* c, int64_t n, int64_t n0, int64_t n1) {
  constexpr int64_t k = 16 * KV;
  __m512 av[M][KV];
  for (int y = 0; y < M; ++y)
    for (int v = 0; v < KV; ++v) av[y][v] = _mm512_loadu_ps(a + y * k + v * 16);
  for (int64_t j0 = n0; j0 < n1; j0 += 16) {
    const int64_t last = (n1 - j0 < 16 ? n1 - j0 : 16) - 1;  // keys past it repeat it
    __m512 quad[4][M];
    for (int g = 0; g < 4; ++g) {
      __m512 s[4][M];
      for (int x = 0; x < 4; ++x) {
        const typename Rows::Row row = b.At(j0 + (4 * g + x < last ? 4 * g + x : last));
        b.Prefetch(row, 0, k, n1);
        for (int y = 0; y < M; ++y) s[x][y] = _mm512_setzero_ps();
        for (int v = 0; v < KV; ++v) {
          const __m512 bv = Rows::Load(row, v * 16);
          for (int y = 0; y < M; ++y) s[x][y] = _mm512_fmadd_ps(bv, av[y][v], s[x][y]);
        }
      }
      for (int y = 0; y < M; ++y) quad[g][y] = Reduce4(s[0][y], s[1][y], s[2][y], s[3][y]);
    }
    const __mmask16 store = last == 15 ? __mmask16(0xffff) : __mmask16((1u << (last + 1)) - 1u);
    for (int y = 0; y < M; ++y)
      _mm512_mask_storeu_ps(c + y * n + j0, store, Reduce16(quad[0][y], quad[1][y], quad[2][y], quad[3][y]));
  }
}

// Whether TransRows and OuterRows take a product with m rows of A.
inline bool TransRowsTakes(int64_t m) { return m >= 1 && m <= 4; }

template <class BT>
void TransRowsAny(const float* a, const BT* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  const Values<BT> rows{b, k};
  if (k == 128 && m == 1) return TransRowsFixed<Values<BT>, 1, 8>(a, rows, c, n, n0, n1);
  if (k == 128 && m == 2) return TransRowsFixed<Values<BT>, 2, 8>(a, rows, c, n, n0, n1);
  if (k == 64 && m == 1) return TransRowsFixed<Values<BT>, 1, 4>(a, rows, c, n, n0, n1);
  if (k == 64 && m == 2) return TransRowsFixed<Values<BT>, 2, 4>(a, rows, c, n, n0, n1);
  switch (m) {
    case 1: return TransRows<BT, 1>(a, b, c, k, n, n0, n1);
    case 2: return TransRows<BT, 2>(a, b, c, k, n, n0, n1);
    case 3: return TransRows<BT, 3>(a, b, c, k, n, n0, n1);
    default: return TransRows<BT, 4>(a, b, c, k, n, n0, n1);
  }
}

// OuterRows (hgemm, sgemm): rows [0, M) of C [M, n], columns [n0, n1) = A [M, k] · B, B [k, n]
// (k = positions, n = head_dim: O = P·V). The columns in strips of NV vectors whose M·NV
// accumulators stay in registers over all k (gemm_tiles.h's DecodeRows keeps C in memory and
// loads and stores it every 4 rows of B); each output is the FMAs over p in order from 0, as there.
// B: a row source (Values, Q8Values) of rows of n values (for Q8Values n0 a multiple of 16).
template <class Rows, int M, int NV>
void OuterRows(const float* a, const Rows& b, float* c, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  for (int64_t j = n0; j < n1; j += NV * 16) {
    const int64_t width = n1 - j < NV * 16 ? n1 - j : NV * 16;
    __mmask16 mk[NV];
    for (int v = 0; v < NV; ++v) {
      const int64_t w = width - v * 16;
      mk[v] = w >= 16 ? __mmask16(0xffff) : w <= 0 ? __mmask16(0) : __mmask16((1u << w) - 1u);
    }
    __m512 acc[M][NV];
    for (int y = 0; y < M; ++y)
      for (int v = 0; v < NV; ++v) acc[y][v] = _mm512_setzero_ps();
    for (int64_t p = 0; p < k; ++p) {
      const typename Rows::Row row = b.At(p);
      b.Prefetch(row, j, width, k);
      __m512 bv[NV];
      for (int v = 0; v < NV; ++v)
        bv[v] = width == NV * 16 ? Rows::Load(row, j + v * 16) : Rows::LoadPart(row, j + v * 16, mk[v]);
      for (int y = 0; y < M; ++y) {
        const __m512 av = _mm512_set1_ps(a[y * k + p]);
        for (int v = 0; v < NV; ++v) acc[y][v] = _mm512_fmadd_ps(av, bv[v], acc[y][v]);
      }
    }
    for (int y = 0; y < M; ++y)
      for (int v = 0; v < NV; ++v) _mm512_mask_storeu_ps(c + y * n + j + v * 16, mk[v], acc[y][v]);
  }
}

// Up to 16 accumulators: 8 vectors of columns for 1-2 rows, 4 for 3-4.
inline int64_t OuterRowsColumns(int64_t m) { return m <= 2 ? 128 : 64; }

// OuterRows for m in [1, 4], in strips of OuterRowsColumns(m) columns.
template <class Rows>
void OuterRowsOf(const float* a, const Rows& b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  switch (m) {
    case 1: return OuterRows<Rows, 1, 8>(a, b, c, k, n, n0, n1);
    case 2: return OuterRows<Rows, 2, 8>(a, b, c, k, n, n0, n1);
    case 3: return OuterRows<Rows, 3, 4>(a, b, c, k, n, n0, n1);
    default: return OuterRows<Rows, 4, 4>(a, b, c, k, n, n0, n1);
  }
}

// OuterRows when the columns fit one strip (a head's values: rows of B read whole, one after the
// other); false otherwise (a wide B, e.g. f16 weights at m = 1, is read in order by DecodeRows,
// where strips would walk down its columns).
template <class BT>
bool OuterRowsAny(const float* a, const BT* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0, int64_t n1) {
  if (!TransRowsTakes(m) || n1 - n0 > OuterRowsColumns(m)) return false;
  OuterRowsOf(a, Values<BT>{b, n}, c, m, k, n, n0, n1);
  return true;
}
