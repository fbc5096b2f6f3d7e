// EmptySlots: the completeness check of a kernel table (every slot filled, the ggml ones included).
#include <cstddef>
#include <string>
#include <vector>

#include "kernels/ggml_blocks.h"
#include "kernels/kernels.h"

namespace weightmap {
namespace kernels {

// The list below names every function slot; these fail when KernelTable or GgmlKernels gains one
// it does not name.
using AnyFn = void (*)();
static_assert(offsetof(KernelTable, i8_zero) == offsetof(KernelTable, quantize_q8) + 22 * sizeof(AnyFn),
              "a KernelTable slot is missing from EmptySlots");
static_assert(offsetof(KernelTable, ggml) == offsetof(KernelTable, i8_zero) + sizeof(AnyFn) &&
                  sizeof(KernelTable) == offsetof(KernelTable, ggml) + sizeof(GgmlKernels),
              "a KernelTable slot is missing from EmptySlots");
static_assert(sizeof(GgmlKernels) == (1 + kBlockTypes) * sizeof(AnyFn), "a GgmlKernels slot is missing from EmptySlots");

std::vector<std::string> EmptySlots(const KernelTable& t) {
  std::vector<std::string> empty;
#define WEIGHTMAP_SLOT(name) \
  if (!t.name) empty.push_back(#name)
  WEIGHTMAP_SLOT(quantize_q8);
  WEIGHTMAP_SLOT(matvec_q8);
  WEIGHTMAP_SLOT(matmul_q8);
  WEIGHTMAP_SLOT(matvec_q8_rows);
  WEIGHTMAP_SLOT(q8_rows_prep_bytes);
  WEIGHTMAP_SLOT(q8_rows_prepare);
  WEIGHTMAP_SLOT(matvec_q8_prepared);
  WEIGHTMAP_SLOT(hgemm);
  WEIGHTMAP_SLOT(hgemm_trans);
  WEIGHTMAP_SLOT(sgemm);
  WEIGHTMAP_SLOT(sgemm_trans);
  WEIGHTMAP_SLOT(q8_gemm);
  WEIGHTMAP_SLOT(q8_gemm_trans);
  WEIGHTMAP_SLOT(f16_to_f32);
  WEIGHTMAP_SLOT(f32_to_f16);
  WEIGHTMAP_SLOT(bf16_to_f32);
  WEIGHTMAP_SLOT(dot_f32);
  WEIGHTMAP_SLOT(axpy_f32);
  WEIGHTMAP_SLOT(quantize_i8);
  WEIGHTMAP_SLOT(gemm_i8);
  WEIGHTMAP_SLOT(sgemm_packed);
  WEIGHTMAP_SLOT(attention);
  WEIGHTMAP_SLOT(ggml.quantize_act);
#undef WEIGHTMAP_SLOT
  for (int i = 0; i < kBlockTypes; ++i)
    if (!t.ggml.matmul[i]) empty.push_back(std::string("ggml.matmul[") + InfoOf(BlockType(i)).name + "]");
  return empty;
}

}  // namespace kernels
}  // namespace weightmap
