// Run-time choice of the kernel table: what the CPU supports (cpuid), what the OS saves on a
// context switch (xgetbv: the YMM and ZMM/opmask state), and WEIGHTMAP_ISA.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/kernels.h"
#include "kernels/tables.h"

#if WEIGHTMAP_KERNELS_X86
#if defined(_MSC_VER)
#include <intrin.h>
#include <immintrin.h>
#else
#include <cpuid.h>
#endif
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif
#endif

#if WEIGHTMAP_KERNELS_ARM64
#if defined(__linux__)
#include <sys/auxv.h>
#elif defined(_WIN32)
#include <windows.h>
#endif
#endif

namespace weightmap {
namespace kernels {

namespace {

#if WEIGHTMAP_KERNELS_X86

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs Cpuid(uint32_t leaf, uint32_t subleaf) {
  CpuidRegs r;
#if defined(_MSC_VER)
  int v[4];
  __cpuidex(v, int(leaf), int(subleaf));
  r.eax = uint32_t(v[0]), r.ebx = uint32_t(v[1]), r.ecx = uint32_t(v[2]), r.edx = uint32_t(v[3]);
#else
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
#endif
  return r;
}

uint64_t Xgetbv0() {
#if defined(_MSC_VER)
  return _xgetbv(0);
#else
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
#endif
}

#if defined(__APPLE__)
// macOS enables the AVX-512 state on first use, so XCR0 may not show it yet.
bool AppleSysctlFlag(const char* name) {
  int value = 0;
  size_t size = sizeof(value);
  return sysctlbyname(name, &value, &size, nullptr, 0) == 0 && value != 0;
}
#endif

struct X86Features {
  bool avx2_fma_f16c = false;
  bool avx512 = false;  // F + BW + DQ + VL, with the OS saving ZMM and opmask state
  bool avx512vnni = false;
};

X86Features DetectX86() {
  X86Features f;
  const uint32_t max_leaf = Cpuid(0, 0).eax;
  if (max_leaf < 7) return f;
  const CpuidRegs l1 = Cpuid(1, 0);
  const bool osxsave = l1.ecx & (1u << 27);
  const bool avx = l1.ecx & (1u << 28);
  const bool fma = l1.ecx & (1u << 12);
  const bool f16c = l1.ecx & (1u << 29);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = Xgetbv0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;  // SSE and AVX state
  bool os_zmm = (xcr0 & 0xe6) == 0xe6;      // plus opmask, ZMM_Hi256, Hi16_ZMM
#if defined(__APPLE__)
  if (!os_zmm && os_ymm) os_zmm = AppleSysctlFlag("hw.optional.avx512f");
#endif
  const CpuidRegs l7 = Cpuid(7, 0);
  const bool avx2 = l7.ebx & (1u << 5);
  const bool avx512f = l7.ebx & (1u << 16);
  const bool avx512dq = l7.ebx & (1u << 17);
  const bool avx512bw = l7.ebx & (1u << 30);
  const bool avx512vl = l7.ebx & (1u << 31);
  const bool vnni = l7.ecx & (1u << 11);
  f.avx2_fma_f16c = os_ymm && avx2 && fma && f16c;
  f.avx512 = f.avx2_fma_f16c && os_zmm && avx512f && avx512dq && avx512bw && avx512vl;
  f.avx512vnni = f.avx512 && vnni;
  return f;
}

#endif  // WEIGHTMAP_KERNELS_X86

#if WEIGHTMAP_KERNELS_ARM64
// kernels_neon.cc is built for ARMv8.2-A with fp16 and dotprod, so it may only run where both exist.
bool NeonUsable() {
#if defined(__APPLE__)
  return true;  // every Apple arm64 CPU has both
#elif defined(__linux__)
  const unsigned long hw = getauxval(AT_HWCAP);
  const unsigned long kAsimdHp = 1ul << 10, kAsimdDp = 1ul << 20;
  return (hw & kAsimdHp) && (hw & kAsimdDp);
#elif defined(_WIN32)
  return IsProcessorFeaturePresent(43 /* PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE */) != 0;
#else
  return false;
#endif
}
#endif

// A copy of `t` with every null ggml slot taken from the scalar reference.
KernelTable WithScalarGgml(const KernelTable& t) {
  KernelTable out = t;
  const GgmlKernels& ref = scalar::ggml();
  if (!out.ggml.quantize_act) out.ggml.quantize_act = ref.quantize_act;
  for (int i = 0; i < kBlockTypes; i++)
    if (!out.ggml.matmul[i]) out.ggml.matmul[i] = ref.matmul[i];
  return out;
}

struct Registry {
  KernelTable owned[8];
  const KernelTable* tables[8] = {};
  int count = 0;
  std::atomic<const KernelTable*> active{nullptr};

  void Add(const KernelTable& t) {
    owned[count] = WithScalarGgml(t);
    tables[count] = &owned[count];
    count++;
  }

  Registry() {
    Add(ScalarTable());
#if WEIGHTMAP_KERNELS_X86
    const X86Features f = DetectX86();
    if (f.avx2_fma_f16c) Add(Avx2Table());
    if (f.avx512) Add(Avx512Table());
    if (f.avx512vnni) Add(Avx512VnniTable());
#endif
#if WEIGHTMAP_KERNELS_ARM64
    if (NeonUsable()) Add(NeonTable());
#endif
    const KernelTable* chosen = tables[count - 1];
    const char* forced = std::getenv("WEIGHTMAP_ISA");
    if (forced && *forced) {
      const KernelTable* t = FindIn(forced);
      if (t) {
        chosen = t;
      } else {
        std::fprintf(stderr, "weightmap: WEIGHTMAP_ISA=%s is not available on this CPU or build; using %s\n",
                     forced, chosen->isa);
      }
    }
    active.store(chosen);
  }

  const KernelTable* FindIn(const char* name) const {
    for (int i = 0; i < count; ++i)
      if (std::strcmp(tables[i]->isa, name) == 0) return tables[i];
    return nullptr;
  }
};

Registry& GetRegistry() {
  static Registry registry;
  return registry;
}

}  // namespace

const KernelTable& Active() { return *GetRegistry().active.load(std::memory_order_acquire); }

const KernelTable* Find(const std::string& isa) { return GetRegistry().FindIn(isa.c_str()); }

const KernelTable* const* Available(int* count) {
  Registry& r = GetRegistry();
  if (count) *count = r.count;
  return r.tables;
}

bool SetIsa(const std::string& isa) {
  Registry& r = GetRegistry();
  const KernelTable* t = r.FindIn(isa.c_str());
  if (!t) return false;
  r.active.store(t, std::memory_order_release);
  return true;
}

}  // namespace kernels
}  // namespace weightmap
