// The parts of ggml_tiles.h's traits that AVX2 and AVX-512 share: 32 values in a ymm register,
// f32 lanes in a ymm, f16 via F16C. Included INSIDE an anonymous namespace of an *_<isa>.cc file
// after <immintrin.h>; the file adds dot, corr, expand and test.
#pragma once

struct GgmlYmm {
  using C = __m256i;
  using A = __m256i;
  using FV = __m256;
  static C load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store(uint8_t* p, C v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static C czero() { return _mm256_setzero_si256(); }
  static C lo4(C v) { return _mm256_and_si256(v, _mm256_set1_epi8(15)); }
  static C hi4(C v) { return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(15)); }
  static C nib(const uint8_t* p) {
    // the 16 bytes in both halves (a plain load), the upper half shifted down by a nibble
    const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return lo4(_mm256_srlv_epi64(v, _mm256_setr_epi64x(0, 0, 4, 4)));
  }
  template <int k>
  static C bits2(C v) {
    return _mm256_and_si256(_mm256_srli_epi16(v, 2 * k), _mm256_set1_epi8(3));
  }
  // 16-bit shifts: the bits a byte takes from its neighbour fall outside the mask 0x30
  template <int k>
  static C bits2_54(C v) {
    const __m256i s = k < 2 ? _mm256_slli_epi16(v, 4 - 2 * k) : _mm256_srli_epi16(v, 2 * k - 4);
    return _mm256_and_si256(s, _mm256_set1_epi8(0x30));
  }
  static C or_(C a, C b) { return _mm256_or_si256(a, b); }
  static C xor80(C v) { return _mm256_xor_si256(v, _mm256_set1_epi8(char(0x80))); }
  static C lut(C idx, const uint8_t* table) {
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(table))), idx);
  }
  static void transpose4(C* v) {
    const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpacklo_epi32(v[2], v[3]);
    const __m256i t2 = _mm256_unpackhi_epi32(v[0], v[1]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
    v[0] = _mm256_unpacklo_epi64(t0, t1);
    v[1] = _mm256_unpackhi_epi64(t0, t1);
    v[2] = _mm256_unpacklo_epi64(t2, t3);
    v[3] = _mm256_unpackhi_epi64(t2, t3);
  }
  static A join8(A a, A b) {
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
  }
  static void join16(A a, A b, A* lo, A* hi) {
    // [I0, I2, I4, I6 | I1, I3, I5, I7] put in order
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    *lo = _mm256_permutevar8x32_epi32(a, order);
    *hi = _mm256_permutevar8x32_epi32(b, order);
  }
  static A aadd(A a, A b) { return _mm256_add_epi32(a, b); }
  static A azero() { return _mm256_setzero_si256(); }
  static A ald(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static FV cvt(A a) { return _mm256_cvtepi32_ps(a); }
  static FV fld(const float* p) { return _mm256_loadu_ps(p); }
  static FV fset1(float v) { return _mm256_set1_ps(v); }
  static FV fmul(FV a, FV b) { return _mm256_mul_ps(a, b); }
  static FV fadd(FV a, FV b) { return _mm256_add_ps(a, b); }
  static FV ffma(FV a, FV b, FV c) { return _mm256_fmadd_ps(a, b, c); }
  static float reduce(FV v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static FV f16x8(uint64_t lo, uint64_t hi) { return _mm256_cvtph_ps(_mm_set_epi64x(int64_t(hi), int64_t(lo))); }
  static float f16(uint16_t h) { return _cvtsh_ss(h); }
  static FV cvt_u8(uint64_t v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(v)))); }
  static FV cvt_s8(uint64_t v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(int64_t(v)))); }
  static FV e8m0x8(uint64_t v) {
    // bits (e - 1) << 23, or 0x00200000 << e where e < 2 (E8m0Half)
    const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(v)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
  }
};
