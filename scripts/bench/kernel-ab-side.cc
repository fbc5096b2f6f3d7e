// One side of kernel-ab.js: the matvec entry points of one checkout's kernels, built with
// -Dweightmap=<namespace> -DAB_SIDE=<side> so that two checkouts link into one binary, exported
// as plain C functions (each side calls its own tables through its own headers).
#include <cstdint>

#include "kernels/ggml_blocks.h"
#include "kernels/kernels.h"
#include "kernels/read_probe.h"
#include "kernels/tables.h"

#define AB_CAT2(a, b) a##_##b
#define AB_CAT(a, b) AB_CAT2(a, b)
#define AB_NAME(name) AB_CAT(AB_CAT(ab, AB_SIDE), name)

namespace {

const weightmap::kernels::KernelTable& Table(int avx2) {
  return avx2 ? weightmap::kernels::Avx2Table() : weightmap::kernels::Avx512VnniTable();
}

}  // namespace

extern "C" {

// The sum of the 8-byte words of [base, base + bytes): the addon's read-bandwidth probe.
uint64_t AB_NAME(read)(const uint8_t* base, int64_t bytes) { return weightmap::kernels::SumWords(base, 0, bytes / 8, 0); }

// Rows [0, rows) of y = W·x for an ajc1 Q8_0 matrix (int8 wq [rows, cols], f32 ws [rows, cols / group]).
void AB_NAME(matvec_q8)(int avx2, const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y,
                        int64_t rows, int64_t cols, int group) {
  Table(avx2).matvec_q8(wq, ws, xq, xs, y, cols, group, 0, rows);
}

// Rows [0, rows) of y = W·x for f16 W [rows, cols] and f32 x (the float decode matvec: hgemm_trans, m = 1).
void AB_NAME(matvec_f16)(int avx2, const uint16_t* w, const float* x, float* y, int64_t rows, int64_t cols) {
  Table(avx2).hgemm_trans(x, w, y, 1, cols, rows, 0, rows);
}

// Rows [0, rows) of y = W·x for W [rows, n] of ggml blocks of the named type; -1 for an unknown name.
int AB_NAME(ggml_matvec)(int avx2, const char* type_name, const uint8_t* w, int64_t rows, int64_t n, const int8_t* q,
                         const float* d, const int16_t* sum, float* y) {
  weightmap::kernels::BlockType type;
  if (!weightmap::kernels::BlockTypeFromName(type_name, &type)) return -1;
  const weightmap::kernels::GgmlKernels& g =
      avx2 ? weightmap::kernels::Avx2Ggml() : weightmap::kernels::Avx512VnniGgml();
  weightmap::kernels::Q8Act x;
  x.m = 1;
  x.n = n;
  x.q = q;
  x.d = d;
  x.sum = sum;
  g.matmul[int(type)](w, x, y, rows, 0, rows);
  return 0;
}

}  // extern "C"
