// Decode's matvec (m = 1) of the ggml types two weight rows at a time, for a traits struct T2
// whose registers hold row r in their low half and row r + 1 in their high half (a zmm as two
// ggml_tiles.h ymm). The unpacking of ggml_tiles.h runs on both rows at once: its pointer is a
// GgmlTwoPtr and the integers it reads are GgmlTwo pairs. Each half goes through exactly the
// operations of ggml_tiles.h's Rows for one row (the activations, prepared by the one-row kernel
// K1, broadcast to both halves), so a row's result has the same bits as with the m > 1 tiles.
// Included INSIDE an anonymous namespace of a *_<isa>.cc file, after ggml_tiles.h.
#pragma once

template <class X>
struct GgmlId {
  using type = X;
};

// A general-register integer (or float) of each of the two rows.
template <class X>
struct GgmlTwo {
  X a, b;
  GgmlTwo() = default;
  explicit GgmlTwo(X v) : a(v), b(v) {}
  GgmlTwo(X va, X vb) : a(va), b(vb) {}
  template <class Y>
  explicit GgmlTwo(GgmlTwo<Y> v) : a(X(v.a)), b(X(v.b)) {}
  GgmlTwo& operator|=(GgmlTwo v) { return a |= v.a, b |= v.b, *this; }
};
template <class X>
GgmlTwo<X> operator&(GgmlTwo<X> v, typename GgmlId<X>::type k) { return {X(v.a & k), X(v.b & k)}; }
template <class X>
GgmlTwo<X> operator|(GgmlTwo<X> v, GgmlTwo<X> w) { return {X(v.a | w.a), X(v.b | w.b)}; }
template <class X>
GgmlTwo<X> operator<<(GgmlTwo<X> v, int s) { return {X(v.a << s), X(v.b << s)}; }
template <class X>
GgmlTwo<X> operator>>(GgmlTwo<X> v, int s) { return {X(v.a >> s), X(v.b >> s)}; }

// Rows p and p + step (step 0: one row, computed twice).
struct GgmlTwoPtr {
  const uint8_t* p;
  int64_t step;
};
inline GgmlTwoPtr operator+(GgmlTwoPtr v, int64_t k) { return {v.p + k, v.step}; }
inline GgmlTwo<uint16_t> GgmlU16(GgmlTwoPtr v) { return {GgmlU16(v.p), GgmlU16(v.p + v.step)}; }
inline GgmlTwo<uint32_t> GgmlU32(GgmlTwoPtr v) { return {GgmlU32(v.p), GgmlU32(v.p + v.step)}; }
inline GgmlTwo<uint64_t> GgmlU64(GgmlTwoPtr v) { return {GgmlU64(v.p), GgmlU64(v.p + v.step)}; }
inline GgmlTwo<uint64_t> GgmlPair(GgmlTwo<uint32_t> lo, GgmlTwo<uint32_t> hi) {
  return {GgmlPair(lo.a, hi.a), GgmlPair(lo.b, hi.b)};
}

// Group gi of both rows into acc, accm (inlined: as a lambda GCC calls it for some types and
// keeps the levels on the stack).
template <class T2, class U2>
GGML_INLINE void GgmlGroupTwo(GgmlTwoPtr w, const GgmlRowPrep& p, int64_t gi, int count, typename T2::FV& acc,
                              typename T2::FV& accm) {
  using K = GgmlKernel<T2, U2>;
  PrefetchAhead(w.p + gi * K::kGroupBytes, K::kGroupBytes);
  if (w.step) PrefetchAhead(w.p + w.step + gi * K::kGroupBytes, K::kGroupBytes);
  GgmlGroup<T2> g;
  U2::Unpack(w + gi * K::kGroupBytes, count, &g);
  T2::transpose4(g.u);
  T2::transpose4(g.u + 4);
  K::Accumulate(g, p, gi, acc, accm);
}

// y[0], y[1] = rows w.p, w.p + w.step against the prepared activation row p (ggml_tiles.h's
// GgmlKernel::Rows<1> for each).
template <class T2, class U2>
GGML_INLINE void GgmlRowTwo(GgmlTwoPtr w, int64_t n, const GgmlRowPrep& p, float* y) {
  typename T2::FV acc = T2::fset1(0.0f), accm = acc;
  const int64_t full = n / kGgmlGroup;
  for (int64_t gi = 0; gi < full; gi++) GgmlGroupTwo<T2, U2>(w, p, gi, 8, acc, accm);
  const int tail = int(n % kGgmlGroup / 32);  // 32-value types only
  if (tail) GgmlGroupTwo<T2, U2>(w, p, full, tail, acc, accm);
  T2::reduce2(U2::kMin ? T2::fadd(acc, accm) : acc, y);
}

// GgmlKernels::matmul for x.m == 1: rows [r0, r1) as two halves read side by side, row r0 + i
// with row r0 + h + i (an odd count's last row of the first half alone), so that each half is
// one sequential stream for the hardware prefetchers (rows r and r + 1 interleave their cache
// lines: a third of the speed from memory). U1 and U2 are the same block type for the one-row
// traits T1 (which prepare the activations) and T2.
template <class T1, class U1, class T2, class U2>
void GgmlMatvecTwo(const uint8_t* w, const Q8Act& x, float* y, int64_t r0, int64_t r1) {
  using K1 = GgmlKernel<T1, U1>;
  if (r1 <= r0) return;
  const int64_t n = x.n, groups = (n + kGgmlGroup - 1) / kGgmlGroup;
  int32_t* buf = static_cast<int32_t*>(Scratch(kScratchA, size_t(groups * K1::kPrepWords * 4)));
  const GgmlRowPrep prep = K1::Prep(x, 0, buf);
  const int64_t row_bytes = n / U2::kValues * U2::kBlockBytes;
  const int64_t h = (r1 - r0 + 1) / 2;
  float out[2];
  for (int64_t r = r0; r < r0 + h; r++) {
    const bool two = r + h < r1;
    GgmlRowTwo<T2, U2>(GgmlTwoPtr{w + r * row_bytes, two ? h * row_bytes : 0}, n, prep, out);
    y[r] = out[0];
    if (two) y[r + h] = out[1];
  }
}
