// matvec_q8_rows and its split form (q8_rows_prepare + matvec_q8_prepared over two blocks) of the
// NEON table, bitwise its matvec_q8 per row and within 1e-4 (relative) of the scalar reference, on
// odd shapes. Run by test/native/run-q8-rows-neon.sh under qemu-aarch64.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "kernels/tables.h"
using namespace weightmap::kernels;
int main() {
  const KernelTable& t = NeonTable();
  int fails = 0;
  unsigned seed = 1;
  auto rnd = [&]() { seed = seed * 1103515245u + 12345u; return (seed >> 8) & 0xffff; };
  for (int group : {32, 64, 16, 8, 96})
    for (int64_t cols : {int64_t(group), int64_t(group) * 3, int64_t(group) * 5, int64_t(4096) / group * group})
      for (int m : {1, 3, 8, 9}) {
        const int64_t rows = 17, groups = cols / group;
        std::vector<int8_t> wq(rows * cols), xq(m * cols);
        std::vector<float> ws(rows * groups), xs(m * groups);
        for (auto& v : wq) v = int8_t(rnd() % 256 - 128);
        for (auto& v : xq) v = int8_t(rnd() % 255 - 127);
        for (auto& v : ws) v = 0.001f + 0.05f * (rnd() / 65536.0f);
        for (auto& v : xs) v = 0.001f + 0.05f * (rnd() / 65536.0f);
        std::vector<float> want(m * rows), got(m * rows), split(m * rows), ref(m * rows);
        for (int i = 0; i < m; i++) {
          t.matvec_q8(wq.data(), ws.data(), xq.data() + i * cols, xs.data() + i * groups, want.data() + i * rows, cols, group, 0, rows);
          scalar::matvec_q8(wq.data(), ws.data(), xq.data() + i * cols, xs.data() + i * groups, ref.data() + i * rows, cols, group, 0, rows);
        }
        t.matvec_q8_rows(wq.data(), ws.data(), xq.data(), xs.data(), got.data(), m, cols, rows, group, 0, rows);
        std::vector<uint8_t> prep(t.q8_rows_prep_bytes(m, cols, group) + 64);
        uint8_t* p = prep.data() + (64 - reinterpret_cast<uintptr_t>(prep.data()) % 64) % 64;
        t.q8_rows_prepare(xq.data(), xs.data(), m, cols, group, p);
        t.matvec_q8_prepared(wq.data(), ws.data(), p, split.data(), m, cols, rows, group, 0, 7);
        t.matvec_q8_prepared(wq.data(), ws.data(), p, split.data(), m, cols, rows, group, 7, rows);
        for (int64_t k = 0; k < m * rows; k++) {
          if (got[k] != want[k] || split[k] != want[k] || std::fabs(want[k] - ref[k]) > 1e-4f * (1 + std::fabs(ref[k]))) {
            if (fails++ < 5) printf("FAIL group %d cols %ld m %d k %ld: %g %g %g ref %g\n", group, long(cols), m, long(k), want[k], got[k], split[k], ref[k]);
          }
        }
      }
  printf("%s: %d failure(s)\n", fails ? "FAILED" : "passed", fails);
  return fails != 0;
}
