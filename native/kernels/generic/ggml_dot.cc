// The scalar reference of the ggml kernels (KernelTable::ggml, contract in kernels.h): every
// weight block unpacked to integer levels, integer sums per sub-block, then the f32 factors.
#include "kernels/ggml_blocks.h"
#include "kernels/tables.h"

namespace weightmap {
namespace kernels {
namespace scalar {

void quantize_act(const float* x, int64_t n, int8_t* q, float* d, int16_t* sum) {
  quantize_q8(x, n, kActBlock, q, d);
  for (int64_t s = 0; s < n / 16; s++) {
    int v = 0;
    for (int k = 0; k < 16; k++) v += q[16 * s + k];
    sum[s] = static_cast<int16_t>(v);
  }
}

namespace {

// Σ_s x.d(s) · (S_s · I_s + M_s · X_s) over one row of blocks, for activation row xq/xd/xsum.
template <BlockType kType>
float DotRow(const uint8_t* row, const int8_t* xq, const float* xd, const int16_t* xsum, int64_t n) {
  const BlockInfo& info = InfoOf(kType);
  UnpackedBlock u;
  float y = 0.0f;
  for (int64_t b = 0; b < n / info.values; b++) {
    UnpackBlock(kType, row + b * info.bytes, &u);
    const int64_t base = b * info.values;
    for (int s = 0; s < u.values / u.sub; s++) {
      const int64_t k0 = base + s * u.sub;
      int32_t dot = 0;
      for (int k = 0; k < u.sub; k++) dot += int32_t(u.q[s * u.sub + k]) * int32_t(xq[k0 + k]);
      float term = u.scale[s] * float(dot);
      if (u.has_min) {
        int32_t xs = 0;
        for (int h = 0; h < u.sub / 16; h++) xs += xsum[k0 / 16 + h];
        term += u.min[s] * float(xs);
      }
      y += xd[k0 / kActBlock] * term;
    }
  }
  return y;
}

template <BlockType kType>
void Matmul(const uint8_t* w, const Q8Act& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  const int64_t row_bytes = RowBytes(kType, x.n);
  for (int64_t i = 0; i < x.m; i++)
    for (int64_t r = r0; r < r1; r++)
      y[i * ldy + r] = DotRow<kType>(w + r * row_bytes, x.q + i * x.n, x.d + i * (x.n / kActBlock),
                                     x.sum + i * (x.n / 16), x.n);
}

}  // namespace

const GgmlKernels& ggml() {
  static const GgmlKernels kernels = [] {
    GgmlKernels k{};
    k.quantize_act = quantize_act;
    k.matmul[int(BlockType::Q4_0)] = Matmul<BlockType::Q4_0>;
    k.matmul[int(BlockType::Q4_1)] = Matmul<BlockType::Q4_1>;
    k.matmul[int(BlockType::Q5_0)] = Matmul<BlockType::Q5_0>;
    k.matmul[int(BlockType::Q5_1)] = Matmul<BlockType::Q5_1>;
    k.matmul[int(BlockType::Q8_0)] = Matmul<BlockType::Q8_0>;
    k.matmul[int(BlockType::Q2_K)] = Matmul<BlockType::Q2_K>;
    k.matmul[int(BlockType::Q3_K)] = Matmul<BlockType::Q3_K>;
    k.matmul[int(BlockType::Q4_K)] = Matmul<BlockType::Q4_K>;
    k.matmul[int(BlockType::Q5_K)] = Matmul<BlockType::Q5_K>;
    k.matmul[int(BlockType::Q6_K)] = Matmul<BlockType::Q6_K>;
    k.matmul[int(BlockType::IQ4_NL)] = Matmul<BlockType::IQ4_NL>;
    k.matmul[int(BlockType::IQ4_XS)] = Matmul<BlockType::IQ4_XS>;
    k.matmul[int(BlockType::MXFP4)] = Matmul<BlockType::MXFP4>;
    return k;
  }();
  return kernels;
}

}  // namespace scalar
}  // namespace kernels
}  // namespace weightmap
