// Internal to native/kernels/: the per-ISA tables that dispatch.cc chooses from, the scalar
// reference functions (SIMD files call them for shapes they do not vectorize), and per-thread
// scratch memory.
//
// Every *_<isa>.cc file is compiled with its own instruction-set flags. Code in those files must
// live in an anonymous namespace (or be a plain function only called after dispatch): an inline
// or template function with external linkage instantiated there could be picked by the linker
// for the baseline files too, and then crash on an older CPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

#if defined(__x86_64__) || defined(_M_X64)
#define WEIGHTMAP_KERNELS_X86 1
#elif defined(__aarch64__) || defined(_M_ARM64)
#define WEIGHTMAP_KERNELS_ARM64 1
#endif

namespace weightmap {
namespace kernels {

const KernelTable& ScalarTable();
#if WEIGHTMAP_KERNELS_X86
const KernelTable& Avx2Table();        // AVX2 + FMA + F16C
const KernelTable& Avx512Table();      // AVX-512 F/BW/DQ/VL (Skylake-X class: no VNNI)
const KernelTable& Avx512VnniTable();  // the same plus AVX512-VNNI (vpdpbusd) for Q8_0
// The ggml kernels of those tables (ggml_dot_<isa>.cc); "avx512" uses the AVX2 ones.
const GgmlKernels& Avx2Ggml();
const GgmlKernels& Avx512VnniGgml();
#endif
#if WEIGHTMAP_KERNELS_ARM64
const KernelTable& NeonTable();  // ARMv8.2 NEON with dot product and fp16 (see dispatch.cc)
const GgmlKernels& NeonGgml();
#endif

// The reference implementations (kernels_scalar.cc), same contracts as KernelTable.
namespace scalar {
void quantize_q8(const float* x, int64_t n, int group, int8_t* q, float* s);
void matvec_q8(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y,
               int64_t cols, int group, int64_t r0, int64_t r1);
void matmul_q8(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y,
               int64_t m, int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1);
void matvec_q8_rows(const int8_t* wq, const float* ws, const int8_t* xq, const float* xs, float* y,
                    int64_t m, int64_t cols, int64_t ldy, int group, int64_t r0, int64_t r1);
// The split matvec_q8_rows of the tables that keep X as it is (the scalar table, and the shapes a
// SIMD table's tiles do not take): prep = xq [m, cols], then xs [m, cols / group] at
// Q8CopyScalesOffset.
int64_t q8_rows_prep_bytes(int64_t m, int64_t cols, int group);
void q8_rows_prepare(const int8_t* xq, const float* xs, int64_t m, int64_t cols, int group, uint8_t* prep);
void matvec_q8_prepared(const int8_t* wq, const float* ws, const uint8_t* prep, float* y, int64_t m, int64_t cols,
                        int64_t ldy, int group, int64_t r0, int64_t r1);
void hgemm(const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n,
           int64_t n0, int64_t n1);
void hgemm_trans(const float* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n,
                 int64_t n0, int64_t n1);
void sgemm(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n, int64_t n0,
           int64_t n1);
void sgemm_trans(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n,
                 int64_t n0, int64_t n1);
void q8_gemm(const float* a, const int8_t* bq, const float* bs, int64_t group, float* c, int64_t m, int64_t k,
             int64_t n, int64_t n0, int64_t n1);
void q8_gemm_trans(const float* a, const int8_t* bq, const float* bs, int64_t group, float* c, int64_t m, int64_t k,
                   int64_t n, int64_t n0, int64_t n1);
void f16_to_f32(const uint16_t* x, float* y, int64_t n);
void f32_to_f16(const float* x, uint16_t* y, int64_t n);
void bf16_to_f32(const uint16_t* x, float* y, int64_t n);
float dot_f32(const float* a, const float* b, int64_t n);
void axpy_f32(float a, const float* x, float* y, int64_t n);
void quantize_i8(const float* x, int64_t m, int64_t k, uint8_t* q, int64_t ldq, float* s);
void gemm_i8(const uint8_t* xq, const float* xs, int64_t m, int64_t ldx, const I8Weights& w, const float* bias,
             float* y, int64_t ldy, int64_t p0, int64_t p1);
void sgemm_packed(const float* x, int64_t m, const F32Panels& w, const float* bias, float* y, int64_t ldy,
                  int64_t p0, int64_t p1);
void attention(const float* q, const float* k, const float* v, float* out, int64_t T, int64_t hd, int64_t ld,
               float scale, float* scratch);
float f16_to_f32_one(uint16_t h);
// The ggml kernels (ggml_dot.cc): every slot filled; dispatch.cc fills a table's null slots from it.
void quantize_act(const float* x, int64_t n, int8_t* q, float* d, int16_t* sum);
const GgmlKernels& ggml();
uint16_t f32_to_f16_one(float f);
}  // namespace scalar

// A 64-byte aligned buffer of at least `bytes`, private to the calling thread and reused by its
// later calls with the same slot (grow-only; freed when the thread exits). Slots let one kernel
// hold several buffers at once. Never returns nullptr (throws std::bad_alloc).
// Where the scales start in scalar::q8_rows_prepare's copy.
inline int64_t Q8CopyScalesOffset(int64_t m, int64_t cols) { return (m * cols + 63) & ~int64_t(63); }

enum ScratchSlot { kScratchA = 0, kScratchB = 1, kScratchC = 2, kScratchD = 3, kScratchSlots = 4 };
void* Scratch(ScratchSlot slot, size_t bytes);

}  // namespace kernels
}  // namespace weightmap
