// GgmlKernels::matmul for m >= kGgmlGemmMinRows activation rows with AVX-512 VNNI (zmm): each
// panel of 16·NV weight rows is unpacked ONCE per call (ggml_tiles.h's U::Unpack, so the
// levels and the f32 sub-block factors are the same bits) into the layout of an int8 GEMM,
// int32 lane = output row and 4 consecutive values per lane, and every tile of M activation rows
// then runs vpdpbusd over it with the activations broadcast 4 bytes at a time. Every block type
// costs the same in the inner loop; the unpacking is paid once per m rows instead of per 8.
// Included INSIDE the anonymous namespace of ggml_dot_avx512.cc, after ggml_tiles.h.
//
// Bit-equal to ggml_tiles.h's GgmlKernel (so to m = 1): that path accumulates f32 in 8 lanes,
// lane j = "slot" j = sub-block j of every 256-value group (16-value sub-blocks: j and 8 + j),
// group after group, then reduces the lanes as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). Here the
// panel is stored slot by slot, so one register per (activation row, 16 output rows) carries
// slot j through all groups with the same fma sequence; the 8 slot results are then combined by
// the same tree. The int32 sums per sub-block are exact in both (the offset term -off·X_s is the
// accumulator's start value here, added after the dot there).
#pragma once

constexpr int kGgmlGemmMinRows = 16;  // fewer activation rows: the ymm tiles (ggml_dot_avx512.cc's Matmul)

// Tiles of TM activation rows × 16·NV output rows: 6 × 32 keeps 12 int32 and 12 f32 accumulators
// in the 32 zmm registers; the 16-value types need two int32 sets (a slot's two sub-blocks), so 4.
template <class T, class U, int TM = U::kSub == 16 ? 4 : 6, int NV = 2>
struct GgmlGemm {
  static constexpr int R = 16 * NV;
  static constexpr int kH = U::kSub == 16 ? 2 : 1;  // sub-blocks of a slot per group
  static constexpr int kGroupBytes = U::kBlockBytes * (kGgmlGroup / U::kValues);
  static constexpr bool kCorr = U::kOff != 0;

  // Offset in the group of the 4 values of (slot j, step t): steps 0..3 of a 16-value type are
  // sub-block j, steps 4..7 sub-block 8 + j.
  static constexpr int Off(int j, int t) { return kH == 1 ? 32 * j + 4 * t : (t < 4 ? 16 * j : 112 + 16 * j) + 4 * t; }

  // One panel of R weight rows, unpacked for all of n; slot j of group g at index j·groups + g:
  //   lev [8 slots][groups][8 steps][R rows][4 bytes]   levels u = q + off
  //   sc, mn [8 slots][groups][kH][R]                     S and M of the slot's sub-blocks
  struct Panel {
    uint8_t* lev;
    float* sc;
    float* mn;
    int64_t groups, full;
    int tail;  // 32-value types: blocks in the last, partial group (slots j < tail exist there)
    int64_t Groups(int j) const { return full + (j < tail ? 1 : 0); }
  };

  static size_t PanelBytes(int64_t groups) { return size_t(groups) * (8 * 8 * R * 4 + 2 * 8 * kH * R * 4); }

  // 16 rows' slot vectors (the 8 words t = 0..7 of a slot; rows k and k + 8 side by side at 2k,
  // 2k + 1) -> 8 vectors of the panel layout (vector t: word t of rows 0..15), stored at
  // out + t·stride: a 16 × 8 transpose of 4-byte words. (The all-ones mask forms of the unpacks:
  // GCC 12's plain ones flag their own undefined operand.)
  static void Transpose16x8(const __m256i* rows, uint8_t* out, int64_t stride) {
    __m512i a[8], b[8], c[8];
    for (int k = 0; k < 8; k++) a[k] = _mm512_loadu_si512(rows + 2 * k);
    for (int k = 0; k < 8; k += 2) {
      b[k] = _mm512_mask_unpacklo_epi32(a[k], 0xffff, a[k], a[k + 1]);  // per 128 bits: words 0, 1 of rows k, k + 1
      b[k + 1] = _mm512_mask_unpackhi_epi32(a[k], 0xffff, a[k], a[k + 1]);
    }
    for (int q = 0; q < 8; q += 4) {
      c[q] = _mm512_mask_unpacklo_epi64(b[q], 0xff, b[q], b[q + 2]);  // per 128 bits: word 0 of 4 rows
      c[q + 1] = _mm512_mask_unpackhi_epi64(b[q], 0xff, b[q], b[q + 2]);
      c[q + 2] = _mm512_mask_unpacklo_epi64(b[q + 1], 0xff, b[q + 1], b[q + 3]);
      c[q + 3] = _mm512_mask_unpackhi_epi64(b[q + 1], 0xff, b[q + 1], b[q + 3]);
    }
    // c[t] (t < 4): 128-bit lanes [t, rows 0-3 | t + 4, rows 0-3 | t, rows 8-11 | t + 4, rows 8-11],
    // c[t + 4] the same for rows 4-7 and 12-15
    const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    for (int t = 0; t < 4; t++) {
      _mm512_storeu_si512(out + t * stride, _mm512_permutex2var_epi64(c[t], lo, c[t + 4]));
      _mm512_storeu_si512(out + (t + 4) * stride, _mm512_permutex2var_epi64(c[t], hi, c[t + 4]));
    }
  }

  static void Unpack(const uint8_t* w, int64_t row_bytes, int nr, Panel& p) {
    if (nr < R) std::memset(p.lev, 0, PanelBytes(p.groups));  // rows past the matrix: zero
    GgmlGroup<T> g;
    __m256i slots[8][16];  // [slot][2 (r % 8) + r / 8] for row r of 16: the slot's 8 words (steps t)
    alignas(32) float s[16], mn[16];
    for (int r0 = 0; r0 < nr; r0 += 16)
      for (int64_t gi = 0; gi < p.groups; gi++) {
        for (int r = 0; r < 16; r++) {
          if (r0 + r >= nr) {
            for (int j = 0; j < 8; j++) slots[j][2 * (r % 8) + r / 8] = _mm256_setzero_si256();
            continue;
          }
          U::Unpack(w + (r0 + r) * row_bytes + gi * kGroupBytes, gi < p.full ? 8 : p.tail, &g);
          for (int j = 0; j < 8; j++)  // 16-value types: half j % 2 of chunks j / 2 and 4 + j / 2 (Off)
            slots[j][2 * (r % 8) + r / 8] = kH == 1 ? g.u[j] : _mm256_permute2x128_si256(g.u[j / 2], g.u[4 + j / 2], j % 2 ? 0x31 : 0x20);
          for (int h = 0; h < kH; h++) {
            _mm256_store_ps(s + 8 * h, g.s[h]);
            if (U::kMin) _mm256_store_ps(mn + 8 * h, g.mn[h]);
          }
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < kH; h++) {
              const int64_t at = (j * p.groups + gi) * kH * R + h * R + r0 + r;
              p.sc[at] = s[8 * h + j];
              if (U::kMin) p.mn[at] = mn[8 * h + j];
            }
        }
        for (int j = 0; j < 8; j++) Transpose16x8(slots[j], p.lev + ((j * p.groups + gi) * 8) * (R * 4) + 4 * r0, R * 4);
      }
  }

  static __m512i Dot(__m512i acc, __m512i u, __m512i x) { return DpbusdReg(acc, u, x); }
  static __m512 Cvt(__m512i a) {
#if defined(__GNUC__)
    // vcvtdq2ps without GCC 12's -Wmaybe-uninitialized on the intrinsic's undefined operand
    typedef int32_t I16 __attribute__((vector_size(64)));
    typedef float F16 __attribute__((vector_size(64)));
    return __m512(__builtin_convertvector(I16(a), F16));
#else
    return _mm512_cvtepi32_ps(a);
#endif
  }
  static __m512i Bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
  }

  // Per activation row, prepared once per call: per sub-block s (index gi·kSubs + s in its group
  // gi) the offset term -off·X_s (types with an offset) and x.d·X_s (types with minimums).
  static constexpr int kSubs = kGgmlGroup / U::kSub;
  struct Act {
    const Q8Act* x;
    const int32_t* corr;  // [m][groups · kSubs]
    const float* xdx;     // [m][groups · kSubs]
    int64_t stride;       // groups · kSubs
  };

  static Act Prepare(const Q8Act& x, int64_t groups) {
    Act a{&x, nullptr, nullptr, groups * kSubs};
    if (!kCorr && !U::kMin) return a;
    const int64_t subs = x.n / U::kSub;
    int32_t* corr = static_cast<int32_t*>(Scratch(kScratchC, size_t(2 * x.m * a.stride) * 4));
    float* xdx = reinterpret_cast<float*>(corr + x.m * a.stride);
    for (int64_t i = 0; i < x.m; i++) {
      const int16_t* sum = x.sum + i * (x.n / 16);
      const float* d = x.d + i * (x.n / 32);
      for (int64_t s = 0; s < subs; s++) {
        const int32_t xs = U::kSub == 16 ? sum[s] : int32_t(sum[2 * s]) + int32_t(sum[2 * s + 1]);
        corr[i * a.stride + s] = -U::kOff * xs;
        xdx[i * a.stride + s] = d[s * U::kSub / 32] * float(xs);  // as GgmlKernel::Prep
      }
    }
    a.corr = corr, a.xdx = xdx;
    return a;
  }

  // Y rows [i0, i0 + M) × the panel's nr rows (at y, row stride ldy).
  template <int M>
  static void Tile(const Panel& p, const Act& a, int64_t i0, float* y, int64_t ldy, int nr) {
    const int64_t n = a.x->n;
    const int8_t* xq[M];
    const float* xd[M];
    const int32_t* xc[M];
    const float* xdx[M];
    for (int i = 0; i < M; i++) {
      xq[i] = a.x->q + (i0 + i) * n;
      xd[i] = a.x->d + (i0 + i) * (n / 32);
      xc[i] = a.corr + (i0 + i) * a.stride;
      xdx[i] = a.xdx + (i0 + i) * a.stride;
    }
    __m512 slot[8][M][NV];
    for (int j = 0; j < 8; j++) {
      const int64_t gn = p.Groups(j);
      __m512 acc[M][NV];
      for (int i = 0; i < M; i++)
        for (int v = 0; v < NV; v++) acc[i][v] = _mm512_setzero_ps();
      for (int64_t gi = 0; gi < gn; gi++) {
        const uint8_t* lv = p.lev + ((j * p.groups + gi) * 8) * (R * 4);
        const float* sc = p.sc + (j * p.groups + gi) * kH * R;
        __m512i ia[kH][M][NV];
        for (int h = 0; h < kH; h++)
          for (int i = 0; i < M; i++) {
            const __m512i c = kCorr ? _mm512_set1_epi32(xc[i][gi * kSubs + 8 * h + j]) : _mm512_setzero_si512();
            for (int v = 0; v < NV; v++) ia[h][i][v] = c;
          }
        const int8_t* xg[M];
        for (int i = 0; i < M; i++) xg[i] = xq[i] + gi * kGgmlGroup;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 8
#endif
        for (int t = 0; t < 8; t++) {
          const int h = kH == 2 && t >= 4 ? 1 : 0;
          __m512i wv[NV];
          for (int v = 0; v < NV; v++) wv[v] = _mm512_loadu_si512(lv + t * (R * 4) + 64 * v);
          for (int i = 0; i < M; i++) {
            const __m512i xb = Bcast4(xg[i] + Off(j, t));
            for (int v = 0; v < NV; v++) ia[h][i][v] = Dot(ia[h][i][v], wv[v], xb);
          }
        }
        // the f32 step of ggml_tiles.h's Accumulate for this slot
        const int64_t b0 = 8 * gi + (kH == 1 ? j : j / 2);  // 32-block of the slot's (first) sub-block
        for (int v = 0; v < NV; v++) {
          const __m512 s0 = _mm512_loadu_ps(sc + 16 * v);
          if (kH == 1) {
            for (int i = 0; i < M; i++)
              acc[i][v] = _mm512_fmadd_ps(Cvt(ia[0][i][v]), _mm512_mul_ps(s0, _mm512_set1_ps(xd[i][b0])), acc[i][v]);
          } else {
            const __m512 s1 = _mm512_loadu_ps(sc + R + 16 * v);
            for (int i = 0; i < M; i++) {
              const __m512 a = _mm512_mul_ps(Cvt(ia[0][i][v]), _mm512_mul_ps(s0, _mm512_set1_ps(xd[i][b0])));
              acc[i][v] = _mm512_add_ps(
                  acc[i][v], _mm512_fmadd_ps(Cvt(ia[1][i][v]), _mm512_mul_ps(s1, _mm512_set1_ps(xd[i][b0 + 4])), a));
            }
          }
        }
      }
      if (U::kMin) {
        // accm = fma(M, x.d·X, accm) per sub-block, in Accumulate's order
        __m512 accm[M][NV];
        for (int i = 0; i < M; i++)
          for (int v = 0; v < NV; v++) accm[i][v] = _mm512_setzero_ps();
        for (int64_t gi = 0; gi < gn; gi++)
          for (int h = 0; h < kH; h++) {
            const float* mn = p.mn + (j * p.groups + gi) * kH * R + h * R;
            const int64_t s = gi * kSubs + 8 * h + j;
            for (int i = 0; i < M; i++) {
              const __m512 b = _mm512_set1_ps(xdx[i][s]);
              for (int v = 0; v < NV; v++) accm[i][v] = _mm512_fmadd_ps(_mm512_loadu_ps(mn + 16 * v), b, accm[i][v]);
            }
          }
        for (int i = 0; i < M; i++)
          for (int v = 0; v < NV; v++) slot[j][i][v] = _mm512_add_ps(acc[i][v], accm[i][v]);
      } else {
        for (int i = 0; i < M; i++)
          for (int v = 0; v < NV; v++) slot[j][i][v] = acc[i][v];
      }
    }
    for (int i = 0; i < M; i++)
      for (int v = 0; v < NV; v++) {
        const __m512 (&l)[8][M][NV] = slot;
        const __m512 r = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(l[0][i][v], l[4][i][v]), _mm512_add_ps(l[2][i][v], l[6][i][v])),
                                       _mm512_add_ps(_mm512_add_ps(l[1][i][v], l[5][i][v]), _mm512_add_ps(l[3][i][v], l[7][i][v])));
        const int left = nr - 16 * v;
        if (left <= 0) continue;
        float* out = y + (i0 + i) * ldy + 16 * v;
        if (left >= 16) _mm512_storeu_ps(out, r);
        else _mm512_mask_storeu_ps(out, __mmask16((1u << left) - 1), r);
      }
  }

  template <int K>
  static void Rest(int left, const Panel& p, const Act& x, int64_t i0, float* y, int64_t ldy, int nr) {
    if constexpr (K > 1) {
      if (left < K) return Rest<K - 1>(left, p, x, i0, y, ldy, nr);
    }
    Tile<K>(p, x, i0, y, ldy, nr);
  }

  static void Matmul(const uint8_t* w, const Q8Act& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
    if (r1 <= r0) return;
    const int64_t n = x.n, m = x.m;
    Panel p;
    p.groups = (n + kGgmlGroup - 1) / kGgmlGroup;
    p.full = n / kGgmlGroup;
    p.tail = int(n % kGgmlGroup / 32);
    uint8_t* buf = static_cast<uint8_t*>(Scratch(kScratchB, PanelBytes(p.groups)));
    p.lev = buf;
    p.sc = reinterpret_cast<float*>(buf + p.groups * (8 * 8 * R * 4));
    p.mn = p.sc + p.groups * 8 * kH * R;
    const int64_t row_bytes = n / U::kValues * U::kBlockBytes;
    const Act a = Prepare(x, p.groups);
    constexpr int M = TM;
    for (int64_t rb = r0; rb < r1; rb += R) {
      const int nr = int(std::min<int64_t>(R, r1 - rb));
      Unpack(w + rb * row_bytes, row_bytes, nr, p);
      int64_t i = 0;
      for (; i + M <= m; i += M) Tile<M>(p, a, i, y + rb, ldy, nr);
      if constexpr (M > 1) {
        if (i < m) Rest<M - 1>(int(m - i), p, a, i, y + rb, ldy, nr);
      }
    }
  }
};
