// q8_gemm and q8_gemm_trans through the table's own f32 gemms (included INSIDE the anonymous
// namespace of a SIMD kernels file, after its Sgemm, SgemmTrans and Axpy): B widened to f32
// kQ8KvPiece rows at a time (widen_q8) into this thread's scratch, which stays in L1/L2 while
// A's rows pass over it. What a table does for the shapes it has no fused kernel for (AVX2 and
// NEON: every shape).
#pragma once

// Rows of B per widened piece: [kQ8KvPiece, head_dim] floats, 64 KB at head_dim 128.
constexpr int64_t kQ8KvPiece = 128;

// Columns [n0, n1) of C [m, n] = A [m, k] · Bᵀ, B [n, k] with scales [n, k / group].
void Q8GemmTransPieces(const float* a, const int8_t* bq, const float* bs, int64_t group, float* c, int64_t m,
                       int64_t k, int64_t n, int64_t n0, int64_t n1) {
  float* piece = static_cast<float*>(Scratch(kScratchC, sizeof(float) * size_t(kQ8KvPiece * k)));  // [len, k]
  for (int64_t j0 = n0; j0 < n1; j0 += kQ8KvPiece) {
    const int64_t len = n1 - j0 < kQ8KvPiece ? n1 - j0 : kQ8KvPiece;
    widen_q8(bq + j0 * k, bs + j0 * k / group, len * k, group, piece);
    SgemmTrans(a, piece, c + j0, m, k, n, 0, len);  // the piece's columns of C (row stride n)
  }
}

// Columns [n0, n1) of C [m, n] = A [m, k] · B, B [k, n] with scales [k, n / group]: per piece of
// B's rows, A's matching columns copied beside it and the piece's product added into C.
void Q8GemmPieces(const float* a, const int8_t* bq, const float* bs, int64_t group, float* c, int64_t m, int64_t k,
                  int64_t n, int64_t n0, int64_t n1) {
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = n0; j < n1; ++j) c[i * n + j] = 0.0f;
    return;
  }
  const int64_t piece_floats = kQ8KvPiece * n;
  // piece [len, n], a_piece [m, len], c_piece [m, n]
  float* piece = static_cast<float*>(Scratch(kScratchC, sizeof(float) * size_t(piece_floats)));
  float* a_piece = static_cast<float*>(Scratch(kScratchD, sizeof(float) * size_t(m * kQ8KvPiece + m * n)));
  float* c_piece = a_piece + m * kQ8KvPiece;
  for (int64_t p0 = 0; p0 < k; p0 += kQ8KvPiece) {
    const int64_t len = k - p0 < kQ8KvPiece ? k - p0 : kQ8KvPiece;
    widen_q8(bq + p0 * n, bs + p0 * n / group, len * n, group, piece);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < len; ++p) a_piece[i * len + p] = a[i * k + p0 + p];
    if (p0 == 0) {
      Sgemm(a_piece, piece, c, m, len, n, n0, n1);
    } else {
      Sgemm(a_piece, piece, c_piece, m, len, n, n0, n1);
      for (int64_t i = 0; i < m; ++i) Axpy(1.0f, c_piece + i * n + n0, c + i * n + n0, n1 - n0);
    }
  }
}
