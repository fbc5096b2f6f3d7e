// Checks every SIMD table's ggml kernels (KernelTable::ggml) against the scalar reference on odd
// shapes, outside Node: for the tables the jest tests cannot reach on this machine (NEON under
// qemu-aarch64; see test/native/run-ggml-neon.sh). Per table, type and shape:
//  - quantize_act bit-equal to the scalar one;
//  - matmul within the contract's budget of the scalar result (kernels.h):
//      (n/16 + 16)·2^-23·Σ_k |x.d(k)|·(|S_k·q_k| + |M_k|)·|x.q[i, k]|
//  - the same bits with the rows split in two and with each activation row alone (m = 1).
// Exit status 0 when every check passes.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/ggml_blocks.h"
#include "kernels/kernels.h"

using namespace weightmap::kernels;

namespace {

std::mt19937 rng(1234);

// Byte offsets of each type's f16 scale (-1: MXFP4's e8m0 byte 0) and (-1 if none) f16 min, by BlockType.
const int kD[kBlockTypes] = {0, 0, 0, 0, 0, 80, 108, 0, 0, 208, 0, 0, -1};
const int kM[kBlockTypes] = {-1, 2, -1, 2, -1, 82, -1, 2, 2, -1, -1, -1, -1};

std::vector<uint8_t> RandomBlocks(BlockType type, int64_t blocks) {
  const BlockInfo& info = InfoOf(type);
  std::vector<uint8_t> w(size_t(blocks * info.bytes));
  for (auto& b : w) b = uint8_t(rng());
  const int t = static_cast<int>(type);
  for (int64_t b = 0; b < blocks; b++) {
    uint8_t* p = w.data() + b * info.bytes;
    if (kD[t] < 0) {
      p[0] = uint8_t(118 + rng() % 8);  // 2^-10 .. 2^-3
      continue;
    }
    // f16 in [2^-9, 2^-7): moderate scales of either sign (mins positive)
    const uint16_t d = uint16_t(0x1800 | (rng() & 0x7ff) | (rng() & 1 ? 0x8000 : 0));
    std::memcpy(p + kD[t], &d, 2);
    if (kM[t] >= 0) {
      const uint16_t m = uint16_t(0x1800 | (rng() & 0x7ff));
      std::memcpy(p + kM[t], &m, 2);
    }
  }
  return w;
}

struct Act {
  int64_t m, n;
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int16_t> sum;
  Q8Act View(int64_t i0, int64_t rows) const {
    Q8Act a;
    a.m = rows, a.n = n, a.q = q.data() + i0 * n, a.d = d.data() + i0 * (n / 32), a.sum = sum.data() + i0 * (n / 16);
    return a;
  }
};

Act Quantize(const GgmlKernels& k, const std::vector<float>& x, int64_t m, int64_t n) {
  Act a{m, n, std::vector<int8_t>(size_t(m * n)), std::vector<float>(size_t(m * n / 32)), std::vector<int16_t>(size_t(m * n / 16))};
  for (int64_t i = 0; i < m; i++) k.quantize_act(x.data() + i * n, n, a.q.data() + i * n, a.d.data() + i * (n / 32), a.sum.data() + i * (n / 16));
  return a;
}

int failures = 0;
void Fail(const char* isa, const char* type, int64_t n, int64_t rows, int64_t m, const char* what) {
  std::printf("FAIL %s %s n=%lld rows=%lld m=%lld: %s\n", isa, type, (long long)n, (long long)rows, (long long)m, what);
  failures++;
}

void Check(const KernelTable& t, const KernelTable& ref, BlockType type, int64_t n, int64_t rows, int64_t m) {
  const char* name = InfoOf(type).name;
  const BlockInfo& info = InfoOf(type);
  const std::vector<uint8_t> w = RandomBlocks(type, rows * n / info.values);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x(size_t(m * n));
  for (auto& v : x) v = u(rng);
  const Act a = Quantize(ref.ggml, x, m, n);
  const Act at = Quantize(t.ggml, x, m, n);
  if (a.q != at.q || std::memcmp(a.d.data(), at.d.data(), a.d.size() * 4) != 0 || a.sum != at.sum)
    Fail(t.isa, name, n, rows, m, "quantize_act differs from the scalar one");

  const int ti = static_cast<int>(type);
  const size_t out = static_cast<size_t>(m * rows);
  std::vector<float> ys(out), y(out), y2(out), y1(static_cast<size_t>(rows));
  ref.ggml.matmul[ti](w.data(), a.View(0, m), ys.data(), rows, 0, rows);
  t.ggml.matmul[ti](w.data(), a.View(0, m), y.data(), rows, 0, rows);

  // the budget, from the unpacked blocks
  const int64_t row_bytes = RowBytes(type, n);
  UnpackedBlock ub;
  double worst = 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < m; i++) {
      double mag = 0;
      for (int64_t b = 0; b < n / info.values; b++) {
        UnpackBlock(type, w.data() + r * row_bytes + b * info.bytes, &ub);
        for (int k = 0; k < ub.values; k++) {
          const int64_t kk = b * info.values + k;
          const double s = std::fabs(double(ub.scale[k / ub.sub]) * ub.q[k]) + (ub.has_min ? std::fabs(double(ub.min[k / ub.sub])) : 0.0);
          mag += std::fabs(double(a.d[i * (n / 32) + kk / 32])) * s * std::abs(int(a.q[i * n + kk]));
        }
      }
      const double budget = double(n / 16 + 16) * std::ldexp(1.0, -23) * mag;
      const double err = std::fabs(double(y[i * rows + r]) - double(ys[i * rows + r]));
      if (!(err <= budget)) {
        Fail(t.isa, name, n, rows, m, "outside the budget");
        std::printf("     row %lld act %lld: %.9g vs scalar %.9g, budget %.3g\n", (long long)r, (long long)i, y[i * rows + r], ys[i * rows + r], budget);
        return;
      }
      if (budget > 0) worst = std::fmax(worst, err / budget);
    }

  const int64_t split = rows / 2;
  t.ggml.matmul[ti](w.data(), a.View(0, m), y2.data(), rows, 0, split);
  t.ggml.matmul[ti](w.data(), a.View(0, m), y2.data(), rows, split, rows);
  if (std::memcmp(y.data(), y2.data(), y.size() * 4) != 0) Fail(t.isa, name, n, rows, m, "rows split in two differ");
  for (int64_t i = 0; i < m; i++) {
    t.ggml.matmul[ti](w.data(), a.View(i, 1), y1.data(), rows, 0, rows);
    if (std::memcmp(y1.data(), y.data() + i * rows, size_t(rows) * 4) != 0) Fail(t.isa, name, n, rows, m, "one activation row alone differs");
  }
  std::printf("ok   %-10s %-6s n=%-4lld rows=%-2lld m=%lld  worst error %.3f of the budget\n", t.isa, name, (long long)n, (long long)rows, (long long)m, worst);
}

}  // namespace

int main() {
  int count = 0;
  const KernelTable* const* tables = Available(&count);
  const KernelTable& ref = *tables[0];
  if (count < 2) std::printf("no SIMD table on this CPU/build: nothing to check\n");
  for (int ti = 1; ti < count; ti++)
    for (int type = 0; type < kBlockTypes; type++) {
      const BlockType bt = static_cast<BlockType>(type);
      const int64_t v = InfoOf(bt).values;
      const int64_t ns[3] = {v, v == 32 ? 224 : 512, v == 32 ? 800 : 1280};
      for (int64_t n : ns)
        for (int64_t rows : {1, 7})
          for (int64_t m : {1, 5, 9}) Check(*tables[ti], ref, bt, n, rows, m);
      Check(*tables[ti], ref, bt, 2560, 3, 113);  // more activation rows than one L2 block of them
    }
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "passed", failures);
  return failures ? 1 : 0;
}
