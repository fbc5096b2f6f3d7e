// The ggml dot products (GgmlKernels, contract in kernels.h) for the SIMD files: every type's
// unpacking and the accumulation, written once over a traits struct T of the including file.
// Included INSIDE an anonymous namespace of a *_<isa>.cc file, after its intrinsics (see
// tables.h for why).
//
//   struct T {
//     static constexpr int kRows;  // activation rows per tile (registers: 2 f32 accumulators each)
//     using C;   // 32 bytes: the levels or activations of 32 consecutive values
//     using A;   // 8 int32 lanes; lane l sums bytes 4l..4l+3 of a C
//     using FV;  // 8 f32 lanes, lane l beside A's lane l
//     static C load(const uint8_t* p); static void store(uint8_t* p, C v);  // 32 bytes
//     static C czero();
//     static C nib(const uint8_t* p);                   // 16 bytes -> 32 values: low nibbles, then high
//     static C lo4(C v); static C hi4(C v);             // v & 15, v >> 4 (per byte)
//     template <int k> static C bits2(C v);             // (v >> 2k) & 3
//     template <int k> static C bits2_54(C v);          // ((v >> 2k) & 3) << 4
//     static C test(C v, uint8_t bit, uint8_t val);     // v & bit ? val : 0
//     static C expand(uint32_t bits, uint8_t val);      // byte j = bit j of bits ? val : 0
//     static C or_(C a, C b); static C xor80(C v);
//     static C lut(C idx, const uint8_t* table16);      // table[idx], idx < 16
//     static constexpr bool corr(int off);              // dot<off> counts u·x, to be corrected by -off·Σx
//     template <int off> static A dot(A acc, C u, C x); // acc + per lane Σ (u - off)·x (or Σ u·x if
//                                                      // corr(off)), exact; u < 2·off (off 128: any byte)
//     static void transpose4(C* v);                     // 4×4 transpose of the 4-byte words of v[0..3]
//                                                      // within each 16-byte half: word j of v[c] <-> word c of v[j]
//     static A join8(A a, A b);                         // a, b: lanes [Σ of the low halves of 4 chunks |
//                                                      // Σ of their high halves]; lane c = chunk c's total
//     static void join16(A a, A b, A* lo, A* hi);       // the same per 16 values: lo lane s = half s % 2 of
//                                                      // chunk s / 2 (from a), hi from b
//     static A aadd(A a, A b); static A azero(); static A ald(const int32_t* p);
//     static FV cvt(A a); static FV fld(const float* p); static FV fset1(float v);
//     static FV fmul(FV a, FV b); static FV fadd(FV a, FV b); static FV ffma(FV a, FV b, FV c);
//     static float reduce(FV v);
//     static FV f16x8(uint64_t lo, uint64_t hi); static float f16(uint16_t h);  // f16 values 0..3, 4..7
//     static FV cvt_u8(uint64_t v); static FV cvt_s8(uint64_t v);  // the 8 bytes of v (little-endian) to f32
//     static FV e8m0x8(uint64_t v);                     // E8m0Half (ggml_blocks.h) of the 8 bytes of v
//   };
// (Scales assembled in general registers go to the vector side as whole u64s, not through small
// stores to memory and a wider load, which the CPU cannot forward: 20-cycle stalls per block.)
//
// The weights are read in groups of 256 values: one super-block, or 8 blocks of a 32-value type
// (a row's last group may hold fewer). A group is unpacked once into 8 chunks of 32 levels u
// (q = u - off: offsets keep the levels unsigned for vpdpbusd / vpmaddubsw) and f32 vectors of
// its sub-block scales S and minimums M, exactly as UnpackBlock computes them. The chunks are
// transposed by 4-byte words (within 16-byte halves, chunks 0..3 and 4..7), and the activations
// likewise once per call, so that the int32 lanes of the dots already belong to one chunk half
// each: per activation row of the tile, 8 dots and a join give vectors of the exact I_s (lane =
// sub-block; the offset's -off·X_s added there when the dot left it out), and one f32 step per 8
// sub-blocks does acc += cvt(I)·(S·x.d); the M·X terms go to a second accumulator through x.d·X
// per sub-block. Every row of a tile goes through the same operations in the same order (and the
// I_s are exact), so its result does not depend on the tile, m or the row split.
#pragma once

constexpr int kGgmlGroup = 256;
constexpr int64_t kGgmlPrepBlockBytes = 512 << 10;  // prepared activation rows per block (L2)

// Each group's weights are prefetched ahead as the group is read (PrefetchAhead). Decode at 1 thread
// over Qwen3-0.6B's matrices (2 MB pages, AVX-512's two streams, interleaved against none): Q4_K
// +5%, Q4_0 +4%, Q6_K +4%, Q8_0 +3%.

// The unpacking and the per-row steps inline into the row loop (GCC otherwise calls Unpack32 and
// keeps the levels on the stack: a quarter of decode's time).
#if defined(__GNUC__)
#define GGML_INLINE inline __attribute__((always_inline))
#else
#define GGML_INLINE inline
#endif

// The IQ4 grid + 128 (kIq4nl of ggml_blocks.cc as u8 levels with offset 128; a constant here so
// that the lookup vector is one load).
alignas(16) constexpr uint8_t kIq4nlU8[16] = {1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241};
// kMxfp4 + 128 likewise.
alignas(16) constexpr uint8_t kMxfp4U8[16] = {128, 129, 130, 131, 132, 134, 136, 140, 128, 127, 126, 125, 124, 122, 120, 116};

template <class T>
struct GgmlGroup {
  typename T::C u[8];
  typename T::FV s[2], mn[2];  // sub-blocks 0..7 and 8..15 (16-value sub-blocks) or 0..7 (32)
};

inline uint16_t GgmlU16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t GgmlU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t GgmlU64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t GgmlPair(uint32_t lo, uint32_t hi) { return lo | uint64_t(hi) << 32; }

// The weights' pointer P and the integers read through it: `const uint8_t*` and plain integers
// for one row, or (GgmlTwoPtr) two rows at once, each integer a GgmlTwo of their two values, so
// that the unpacking below is written once for both.

// ---------------------------------------------------------------- 32-value types
// U::Levels(block) -> C; group = `count` consecutive blocks (count <= 8); d (and m) per block.
template <class T, class U, class P>
GGML_INLINE void Unpack32(P p, int count, GgmlGroup<T>* g) {
  using W = decltype(GgmlU64(p));
  W d[2] = {W(0), W(0)}, m[2] = {W(0), W(0)};
  for (int c = count; c < 8; c++) g->u[c] = T::czero();  // meets zero activations
  for (int c = 0; c < count; c++) {
    const P b = p + c * U::kBlockBytes;
    g->u[c] = U::Levels(b);
    d[c / 4] |= W(GgmlU16(b)) << (16 * (c % 4));
    if (U::kMin) m[c / 4] |= W(GgmlU16(b + 2)) << (16 * (c % 4));
  }
  g->s[0] = T::f16x8(d[0], d[1]);
  if (U::kMin) g->mn[0] = T::f16x8(m[0], m[1]);
}

template <class T>
struct GgmlQ4_0 {
  static constexpr BlockType kType = BlockType::Q4_0;
  static constexpr int kValues = 32, kBlockBytes = 18, kOff = 8, kSub = 32;
  static constexpr bool kMin = false;
  template <class P>
  static typename T::C Levels(P b) { return T::nib(b + 2); }
  template <class P>
  GGML_INLINE static void Unpack(P p, int count, GgmlGroup<T>* g) { Unpack32<T, GgmlQ4_0>(p, count, g); }
};

template <class T>
struct GgmlQ4_1 {
  static constexpr BlockType kType = BlockType::Q4_1;
  static constexpr int kValues = 32, kBlockBytes = 20, kOff = 0, kSub = 32;
  static constexpr bool kMin = true;
  template <class P>
  static typename T::C Levels(P b) { return T::nib(b + 4); }
  template <class P>
  GGML_INLINE static void Unpack(P p, int count, GgmlGroup<T>* g) { Unpack32<T, GgmlQ4_1>(p, count, g); }
};

template <class T>
struct GgmlQ5_0 {
  static constexpr BlockType kType = BlockType::Q5_0;
  static constexpr int kValues = 32, kBlockBytes = 22, kOff = 16, kSub = 32;
  static constexpr bool kMin = false;
  template <class P>
  static typename T::C Levels(P b) { return T::or_(T::nib(b + 6), T::expand(GgmlU32(b + 2), 16)); }
  template <class P>
  GGML_INLINE static void Unpack(P p, int count, GgmlGroup<T>* g) { Unpack32<T, GgmlQ5_0>(p, count, g); }
};

template <class T>
struct GgmlQ5_1 {
  static constexpr BlockType kType = BlockType::Q5_1;
  static constexpr int kValues = 32, kBlockBytes = 24, kOff = 0, kSub = 32;
  static constexpr bool kMin = true;
  template <class P>
  static typename T::C Levels(P b) { return T::or_(T::nib(b + 8), T::expand(GgmlU32(b + 4), 16)); }
  template <class P>
  GGML_INLINE static void Unpack(P p, int count, GgmlGroup<T>* g) { Unpack32<T, GgmlQ5_1>(p, count, g); }
};

template <class T>
struct GgmlQ8_0 {
  static constexpr BlockType kType = BlockType::Q8_0;
  static constexpr int kValues = 32, kBlockBytes = 34, kOff = 128, kSub = 32;
  static constexpr bool kMin = false;
  template <class P>
  static typename T::C Levels(P b) { return T::xor80(T::load(b + 2)); }
  template <class P>
  GGML_INLINE static void Unpack(P p, int count, GgmlGroup<T>* g) { Unpack32<T, GgmlQ8_0>(p, count, g); }
};

template <class T>
struct GgmlIq4Nl {
  static constexpr BlockType kType = BlockType::IQ4_NL;
  static constexpr int kValues = 32, kBlockBytes = 18, kOff = 128, kSub = 32;
  static constexpr bool kMin = false;
  template <class P>
  static typename T::C Levels(P b) { return T::lut(T::nib(b + 2), kIq4nlU8); }
  template <class P>
  GGML_INLINE static void Unpack(P p, int count, GgmlGroup<T>* g) { Unpack32<T, GgmlIq4Nl>(p, count, g); }
};

// MXFP4 {u8 e; qs[16]}: the e2m1 grid at the nibbles; the scales from the e8m0 bytes, not f16.
template <class T>
struct GgmlMxfp4 {
  static constexpr BlockType kType = BlockType::MXFP4;
  static constexpr int kValues = 32, kBlockBytes = 17, kOff = 128, kSub = 32;
  static constexpr bool kMin = false;
  template <class P>
  GGML_INLINE static void Unpack(P p, int count, GgmlGroup<T>* g) {
    using W = decltype(GgmlU64(p));
    W e = W(0);
    for (int c = count; c < 8; c++) g->u[c] = T::czero();  // meets zero activations
    for (int c = 0; c < count; c++) {
      const P b = p + c * kBlockBytes;
      g->u[c] = T::lut(T::nib(b + 1), kMxfp4U8);
      // the exponent as the low byte of a u16 (with qs[0]): GgmlTwo pairs of bytes went through
      // the stack (16-bit stores, then a wider load: a third of two-row decode's speed)
      e |= (W(GgmlU16(b)) & 0xff) << (8 * c);
    }
    g->s[0] = T::e8m0x8(e);
  }
};

// ---------------------------------------------------------------- super-blocks
// Chunk c holds values 32c..32c+31 (bit positions in ggml_blocks.cc's UnpackBlock).

// Q2_K {scales[16]; qs[64]; f16 d, dmin}: chunk 4h + k = bits 2k..2k+1 of qs[32h + l].
template <class T>
struct GgmlQ2K {
  static constexpr BlockType kType = BlockType::Q2_K;
  static constexpr int kValues = 256, kBlockBytes = 84, kOff = 0, kSub = 16;
  static constexpr bool kMin = true;
  template <class P>
  GGML_INLINE static void Unpack(P p, int, GgmlGroup<T>* g) {
    for (int h = 0; h < 2; h++) {
      const typename T::C q = T::load(p + 16 + 32 * h);
      g->u[4 * h + 0] = T::template bits2<0>(q);
      g->u[4 * h + 1] = T::template bits2<1>(q);
      g->u[4 * h + 2] = T::template bits2<2>(q);
      g->u[4 * h + 3] = T::template bits2<3>(q);
    }
    const typename T::FV d = T::fset1(T::f16(GgmlU16(p + 80))), nd = T::fset1(-T::f16(GgmlU16(p + 82)));
    for (int h = 0; h < 2; h++) {
      const auto s = GgmlU64(p + 8 * h);
      g->s[h] = T::fmul(d, T::cvt_u8(s & 0x0f0f0f0f0f0f0f0full));
      g->mn[h] = T::fmul(nd, T::cvt_u8((s >> 4) & 0x0f0f0f0f0f0f0f0full));  // -(dmin·m): ggml's rounding
    }
  }
};

// Q3_K {hmask[32]; qs[64]; scales[12]; f16 d}: chunk 4h + k = Q2_K's bits plus 4 where bit
// 4h + k of hmask[l] is set (level u = q + 4).
template <class T>
struct GgmlQ3K {
  static constexpr BlockType kType = BlockType::Q3_K;
  static constexpr int kValues = 256, kBlockBytes = 110, kOff = 4, kSub = 16;
  static constexpr bool kMin = false;
  template <class P>
  GGML_INLINE static void Unpack(P p, int, GgmlGroup<T>* g) {
    const typename T::C hm = T::load(p);
    for (int h = 0; h < 2; h++) {
      const typename T::C q = T::load(p + 32 + 32 * h);
      g->u[4 * h + 0] = T::or_(T::template bits2<0>(q), T::test(hm, uint8_t(1u << (4 * h + 0)), 4));
      g->u[4 * h + 1] = T::or_(T::template bits2<1>(q), T::test(hm, uint8_t(1u << (4 * h + 1)), 4));
      g->u[4 * h + 2] = T::or_(T::template bits2<2>(q), T::test(hm, uint8_t(1u << (4 * h + 2)), 4));
      g->u[4 * h + 3] = T::or_(T::template bits2<3>(q), T::test(hm, uint8_t(1u << (4 * h + 3)), 4));
    }
    // Scale j: 4 low bits from nibble j % 8 of bytes 0..7 (low nibbles first), 2 high bits from
    // bits 2·(j / 4) of byte 8 + j % 4; as four bytes at a time (a, b: bytes 0..3, 4..7; c: 8..11).
    const P s = p + 96;
    const auto a = GgmlU32(s), b = GgmlU32(s + 4), c = GgmlU32(s + 8);
    const auto lo = GgmlPair((a & 0x0f0f0f0f) | ((c << 4) & 0x30303030), (b & 0x0f0f0f0f) | ((c << 2) & 0x30303030));
    const auto hi = GgmlPair(((a >> 4) & 0x0f0f0f0f) | (c & 0x30303030), ((b >> 4) & 0x0f0f0f0f) | ((c >> 2) & 0x30303030));
    // d·(scale - 32), the subtraction exact in f32
    const typename T::FV d = T::fset1(T::f16(GgmlU16(p + 108))), m32 = T::fset1(-32.0f);
    g->s[0] = T::fmul(d, T::fadd(T::cvt_u8(lo), m32));
    g->s[1] = T::fmul(d, T::fadd(T::cvt_u8(hi), m32));
  }
};

// The 6-bit scales and mins of Q4_K / Q5_K (12 bytes): j < 4 from the low 6 bits of bytes j and
// j + 4; j >= 4 from the nibbles of byte j + 4 and the top 2 bits of bytes j - 4 and j.
template <class P, class W>
GGML_INLINE void GgmlScaleMinK4(P s, W* sc, W* m) {
  const auto a = GgmlU32(s), b = GgmlU32(s + 4), c = GgmlU32(s + 8);
  *sc = GgmlPair(a & 0x3f3f3f3f, (c & 0x0f0f0f0f) | ((a >> 2) & 0x30303030));
  *m = GgmlPair(b & 0x3f3f3f3f, ((c >> 4) & 0x0f0f0f0f) | ((b >> 2) & 0x30303030));
}

// Q4_K {f16 d, dmin; scales[12]; qs[128]} and Q5_K {...; qh[32]; qs[128]}: chunk 2h = low
// nibbles of qs[32h + l], 2h + 1 their high nibbles; Q5_K adds 16 where bit c of qh[l] is set.
template <class T, bool kFive>
struct GgmlQ45K {
  static constexpr BlockType kType = kFive ? BlockType::Q5_K : BlockType::Q4_K;
  static constexpr int kValues = 256, kBlockBytes = kFive ? 176 : 144, kOff = 0, kSub = 32;
  static constexpr bool kMin = true;
  template <class P>
  GGML_INLINE static void Unpack(P p, int, GgmlGroup<T>* g) {
    const P qs = p + (kFive ? 48 : 16);
    for (int h = 0; h < 4; h++) {
      const typename T::C q = T::load(qs + 32 * h);
      g->u[2 * h] = T::lo4(q);
      g->u[2 * h + 1] = T::hi4(q);
    }
    if (kFive) {
      const typename T::C qh = T::load(p + 16);
      for (int c = 0; c < 8; c++) g->u[c] = T::or_(g->u[c], T::test(qh, uint8_t(1u << c), 16));
    }
    decltype(GgmlU64(p)) sc, m;
    GgmlScaleMinK4(p + 4, &sc, &m);
    g->s[0] = T::fmul(T::fset1(T::f16(GgmlU16(p))), T::cvt_u8(sc));
    g->mn[0] = T::fmul(T::fset1(-T::f16(GgmlU16(p + 2))), T::cvt_u8(m));
  }
};
template <class T>
using GgmlQ4K = GgmlQ45K<T, false>;
template <class T>
using GgmlQ5K = GgmlQ45K<T, true>;

// Q6_K {ql[128]; qh[64]; i8 scales[16]; f16 d}: chunk 4h + k = the low (k < 2) or high nibbles
// of ql[64h + 32(k & 1) + l] and bits 2k..2k+1 of qh[32h + l] as bits 4..5 (u = q + 32).
template <class T>
struct GgmlQ6K {
  static constexpr BlockType kType = BlockType::Q6_K;
  static constexpr int kValues = 256, kBlockBytes = 210, kOff = 32, kSub = 16;
  static constexpr bool kMin = false;
  template <class P>
  GGML_INLINE static void Unpack(P p, int, GgmlGroup<T>* g) {
    for (int h = 0; h < 2; h++) {
      const typename T::C l0 = T::load(p + 64 * h), l1 = T::load(p + 64 * h + 32), qh = T::load(p + 128 + 32 * h);
      g->u[4 * h + 0] = T::or_(T::lo4(l0), T::template bits2_54<0>(qh));
      g->u[4 * h + 1] = T::or_(T::lo4(l1), T::template bits2_54<1>(qh));
      g->u[4 * h + 2] = T::or_(T::hi4(l0), T::template bits2_54<2>(qh));
      g->u[4 * h + 3] = T::or_(T::hi4(l1), T::template bits2_54<3>(qh));
    }
    const typename T::FV d = T::fset1(T::f16(GgmlU16(p + 208)));
    g->s[0] = T::fmul(d, T::cvt_s8(GgmlU64(p + 192)));
    g->s[1] = T::fmul(d, T::cvt_s8(GgmlU64(p + 200)));
  }
};

// IQ4_XS {f16 d; u16 scales_h; scales_l[4]; qs[128]}: chunk j = the grid at the nibbles of
// qs[16j..16j+16) (low, then high); scale j = (nibble j of scales_l | bits 2j..2j+1 of scales_h
// << 4) - 32.
template <class T>
struct GgmlIq4Xs {
  static constexpr BlockType kType = BlockType::IQ4_XS;
  static constexpr int kValues = 256, kBlockBytes = 136, kOff = 128, kSub = 32;
  static constexpr bool kMin = false;
  template <class P>
  GGML_INLINE static void Unpack(P p, int, GgmlGroup<T>* g) {
    for (int c = 0; c < 8; c++) g->u[c] = T::lut(T::nib(p + 8 + 16 * c), kIq4nlU8);
    // nibble j of scales_l and bits 2j..2j+1 of scales_h moved to byte j
    using W = decltype(GgmlU64(p));
    W lo = W(GgmlU32(p + 4)), hi = W(GgmlU16(p + 2));
    lo = (lo | lo << 16) & 0x0000ffff0000ffffull;
    lo = (lo | lo << 8) & 0x00ff00ff00ff00ffull;
    lo = (lo | lo << 4) & 0x0f0f0f0f0f0f0f0full;
    hi = (hi | hi << 24) & 0x000000ff000000ffull;
    hi = (hi | hi << 12) & 0x000f000f000f000full;
    hi = (hi | hi << 6) & 0x0303030303030303ull;
    g->s[0] = T::fmul(T::fset1(T::f16(GgmlU16(p))), T::fadd(T::cvt_u8(lo | hi << 4), T::fset1(-32.0f)));
  }
};

// ---------------------------------------------------------------- the dot products
// Per activation row, prepared once per call: -off·X_s per sub-block (when the dot leaves the
// offset out), x.d per 32 values (and per 16: each twice), and x.d·X_s per sub-block (types
// with minimums); zero past n up to whole groups.
struct GgmlRowPrep {
  const uint8_t* xt;    // [groups · 256]: the activations, transposed as the weights (zero past n)
  const int32_t* corr;  // [groups · 8] (32-value sub-blocks) or [groups · 16]
  const float* xd;      // [groups · 8]
  const float* xd16;    // [groups · 16]
  const float* xdx;     // [groups · 8] or [groups · 16], as corr
};

template <class T, class U>
struct GgmlKernel {
  using A = typename T::A;
  using FV = typename T::FV;
  static constexpr bool kCorr = T::corr(U::kOff);
  static constexpr int kGroupBytes = U::kBlockBytes * (kGgmlGroup / U::kValues);
  static constexpr int kSubs = kGgmlGroup / U::kSub;  // sub-blocks per group: 8 or 16
  static constexpr int64_t kPrepWords = 64 + 16 + 8 + 16 + 16;  // per group: xt, corr, xd, xd16, xdx

  static GgmlRowPrep Prep(const Q8Act& x, int64_t i, int32_t* buf) {
    const int64_t n = x.n, groups = (n + kGgmlGroup - 1) / kGgmlGroup;
    const float* d = x.d + i * (n / 32);
    const int16_t* sum = x.sum + i * (n / 16);
    uint8_t* xt = reinterpret_cast<uint8_t*>(buf);
    const uint8_t* q = reinterpret_cast<const uint8_t*>(x.q + i * n);
    for (int64_t c = 0; c < groups * 8; c++) {
      if (c < n / 32) std::memcpy(xt + 32 * c, q + 32 * c, 32);
      else std::memset(xt + 32 * c, 0, 32);
    }
    for (int64_t c = 0; c < groups * 8; c += 4) {
      typename T::C v[4];
      for (int j = 0; j < 4; j++) v[j] = T::load(xt + 32 * (c + j));
      T::transpose4(v);
      for (int j = 0; j < 4; j++) T::store(xt + 32 * (c + j), v[j]);
    }
    int32_t* corr = buf + groups * 64;
    float* xd = reinterpret_cast<float*>(corr + groups * 16);
    float* xd16 = xd + groups * 8;
    float* xdx = xd16 + groups * 16;
    const int64_t subs = n / U::kSub;
    for (int64_t s = 0; s < groups * kSubs; s++) {
      const int xs = s >= subs ? 0 : U::kSub == 16 ? sum[s] : sum[2 * s] + sum[2 * s + 1];
      corr[s] = -U::kOff * xs;
      xdx[s] = s < subs ? d[s * U::kSub / 32] * float(xs) : 0.0f;
    }
    for (int64_t k = 0; k < groups * 8; k++) xd[k] = k < n / 32 ? d[k] : 0.0f;
    for (int64_t s = 0; s < groups * 16; s++) xd16[s] = s < n / 16 ? d[s / 2] : 0.0f;
    return GgmlRowPrep{xt, corr, xd, xd16, xdx};
  }

  // acc += Σ_s cvt(I_s)·S_s·x.d(s) over group gi (its chunks transposed); accm += Σ_s M_s·x.d(s)·X_s.
  GGML_INLINE static void Accumulate(const GgmlGroup<T>& g, const GgmlRowPrep& p, int64_t gi, FV& acc, FV& accm) {
    const uint8_t* x = p.xt + gi * kGgmlGroup;
    A h[2];
    for (int b = 0; b < 2; b++) {
      h[b] = T::azero();
      for (int j = 0; j < 4; j++) h[b] = T::template dot<U::kOff>(h[b], g.u[4 * b + j], T::load(x + 128 * b + 32 * j));
    }
    if (U::kSub == 32) {
      A i = T::join8(h[0], h[1]);
      if (kCorr) i = T::aadd(i, T::ald(p.corr + 8 * gi));
      acc = T::ffma(T::cvt(i), T::fmul(g.s[0], T::fld(p.xd + 8 * gi)), acc);
    } else {
      A lo, hi;
      T::join16(h[0], h[1], &lo, &hi);
      if (kCorr) {
        lo = T::aadd(lo, T::ald(p.corr + 16 * gi));
        hi = T::aadd(hi, T::ald(p.corr + 16 * gi + 8));
      }
      const FV a = T::fmul(T::cvt(lo), T::fmul(g.s[0], T::fld(p.xd16 + 16 * gi)));
      acc = T::fadd(acc, T::ffma(T::cvt(hi), T::fmul(g.s[1], T::fld(p.xd16 + 16 * gi + 8)), a));
    }
    if (U::kMin) {
      accm = T::ffma(g.mn[0], T::fld(p.xdx + kSubs * gi), accm);
      if (U::kSub == 16) accm = T::ffma(g.mn[1], T::fld(p.xdx + 16 * gi + 8), accm);
    }
  }

  // y[j] = row `w` against activation rows p[0..R).
  template <int R>
  static void Rows(const uint8_t* w, int64_t n, const GgmlRowPrep* p, float* y) {
    FV acc[R], accm[R];
    for (int i = 0; i < R; i++) acc[i] = accm[i] = T::fset1(0.0f);
    GgmlGroup<T> g;
    const int64_t full = n / kGgmlGroup;
    auto group = [&](int64_t gi, int count) {
      PrefetchAhead(w + gi * kGroupBytes, kGroupBytes);
      U::Unpack(w + gi * kGroupBytes, count, &g);
      T::transpose4(g.u);
      T::transpose4(g.u + 4);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 8
#endif
      for (int i = 0; i < R; i++) Accumulate(g, p[i], gi, acc[i], accm[i]);
    };
    for (int64_t gi = 0; gi < full; gi++) group(gi, 8);
    const int tail = int(n % kGgmlGroup / 32);  // 32-value types only
    if (tail) group(full, tail);
    for (int i = 0; i < R; i++) y[i] = U::kMin ? T::reduce(T::fadd(acc[i], accm[i])) : T::reduce(acc[i]);
  }

  // Rows<count> for a count in [1, R] known only at run time.
  template <int R>
  static void PartialRows(int count, const uint8_t* w, int64_t n, const GgmlRowPrep* p, float* y) {
    if constexpr (R > 1) {
      if (count < R) return PartialRows<R - 1>(count, w, n, p, y);
    }
    Rows<R>(w, n, p, y);
  }

  // GgmlKernels::matmul: each weight row is unpacked once per tile of T::kRows activation rows.
  static void Matmul(const uint8_t* w, const Q8Act& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
    if (r1 <= r0) return;
    const int64_t n = x.n, m = x.m, groups = (n + kGgmlGroup - 1) / kGgmlGroup;
    const int64_t row_words = groups * kPrepWords;
    uint8_t* buf = static_cast<uint8_t*>(Scratch(kScratchA, size_t(m * row_words * 4 + m * sizeof(GgmlRowPrep))));
    GgmlRowPrep* prep = reinterpret_cast<GgmlRowPrep*>(buf + m * row_words * 4);
    for (int64_t i = 0; i < m; i++) prep[i] = Prep(x, i, reinterpret_cast<int32_t*>(buf) + i * row_words);
    const int64_t row_bytes = n / U::kValues * U::kBlockBytes;
    constexpr int kTile = T::kRows;
    // Activation rows in blocks whose prepared data stays in L2 while every weight row passes
    // (all of a 512-token prefill would not: 75 -> 58 GMAC/s at n = 3072).
    const int64_t block = std::max<int64_t>(1, kGgmlPrepBlockBytes / (row_words * 4 * kTile)) * kTile;
    float out[kTile];
    for (int64_t i0 = 0; i0 < m; i0 += block) {
      const int64_t i1 = std::min(m, i0 + block);
      for (int64_t r = r0; r < r1; r++) {
        const uint8_t* wr = w + r * row_bytes;
        int64_t i = i0;
        for (; i + kTile <= i1; i += kTile) {
          Rows<kTile>(wr, n, prep + i, out);
          for (int j = 0; j < kTile; j++) y[(i + j) * ldy + r] = out[j];
        }
        // The rest as one partial tile (the row still unpacked once: a 2-7 row batch, such as a
        // speculative verification or a few decoding sequences, would otherwise unpack it per row).
        if (i < i1) {
          const int rest = int(i1 - i);
          PartialRows<kTile - 1>(rest, wr, n, prep + i, out);
          for (int j = 0; j < rest; j++) y[(i + j) * ldy + r] = out[j];
        }
      }
    }
  }
};

// q, d as the table's quantize_q8 with groups of 32, then the sums per 16.
inline void GgmlActSums(const int8_t* q, int64_t n, int16_t* sum) {
  for (int64_t s = 0; s < n / 16; s++) {
    int v = 0;
    for (int k = 0; k < 16; k++) v += q[16 * s + k];
    sum[s] = int16_t(v);
  }
}

template <class T>
GgmlKernels GgmlTable(void (*quantize_act)(const float*, int64_t, int8_t*, float*, int16_t*)) {
  GgmlKernels k{};
  k.quantize_act = quantize_act;
  k.matmul[int(BlockType::Q4_0)] = GgmlKernel<T, GgmlQ4_0<T>>::Matmul;
  k.matmul[int(BlockType::Q4_1)] = GgmlKernel<T, GgmlQ4_1<T>>::Matmul;
  k.matmul[int(BlockType::Q5_0)] = GgmlKernel<T, GgmlQ5_0<T>>::Matmul;
  k.matmul[int(BlockType::Q5_1)] = GgmlKernel<T, GgmlQ5_1<T>>::Matmul;
  k.matmul[int(BlockType::Q8_0)] = GgmlKernel<T, GgmlQ8_0<T>>::Matmul;
  k.matmul[int(BlockType::Q2_K)] = GgmlKernel<T, GgmlQ2K<T>>::Matmul;
  k.matmul[int(BlockType::Q3_K)] = GgmlKernel<T, GgmlQ3K<T>>::Matmul;
  k.matmul[int(BlockType::Q4_K)] = GgmlKernel<T, GgmlQ4K<T>>::Matmul;
  k.matmul[int(BlockType::Q5_K)] = GgmlKernel<T, GgmlQ5K<T>>::Matmul;
  k.matmul[int(BlockType::Q6_K)] = GgmlKernel<T, GgmlQ6K<T>>::Matmul;
  k.matmul[int(BlockType::IQ4_NL)] = GgmlKernel<T, GgmlIq4Nl<T>>::Matmul;
  k.matmul[int(BlockType::IQ4_XS)] = GgmlKernel<T, GgmlIq4Xs<T>>::Matmul;
  k.matmul[int(BlockType::MXFP4)] = GgmlKernel<T, GgmlMxfp4<T>>::Matmul;
  return k;
}
