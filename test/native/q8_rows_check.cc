// matvec_q8_rows and its split form (q8_rows_prepare + matvec_q8_prepared over two blocks) of the
// NEON table, bitwise its matvec_q8 per row and within 1e-4 (relative) of the scalar reference, on
// odd shapes; and its q8_gemm / q8_gemm_trans (attention against a q8_0 KV cache) within
// (k + 2)·2^-24·Σ|a·b| of the product computed in double. Run by
// test/native/run-q8-rows-neon.sh under qemu-aarch64.
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
  // [m, k, n, group]; trans: B [n, k], else B [k, n] (k positions, n head_dim).
  const int64_t kv_shapes[][4] = {{1, 128, 515, 32}, {2, 64, 300, 32}, {5, 128, 77, 32}, {1, 80, 33, 80}, {2, 0, 128, 32}};
  for (bool trans : {true, false})
    for (const auto& sh : kv_shapes) {
      const int64_t m = sh[0], k = trans ? sh[1] : sh[2], n = trans ? sh[2] : sh[1], group = sh[3];
      std::vector<int8_t> bq(k * n);
      std::vector<float> bs(k * n / group), a(m * k), got(m * n, NAN);
      for (auto& v : bq) v = int8_t(rnd() % 255 - 127);
      for (auto& v : bs) v = 0.001f + 0.01f * (rnd() / 65536.0f);
      for (auto& v : a) v = rnd() / 32768.0f - 1.0f;
      (trans ? t.q8_gemm_trans : t.q8_gemm)(a.data(), bq.data(), bs.data(), group, got.data(), m, k, n, 0, n);
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double want = 0, mag = 0;
          for (int64_t p = 0; p < k; p++) {
            const int64_t at = trans ? j * k + p : p * n + j;
            const double prod = double(a[i * k + p]) * double(float(bq[at]) * bs[at / group]);
            want += prod;
            mag += std::fabs(prod);
          }
          if (!(std::fabs(got[i * n + j] - want) <= (k + 2) * 0x1p-24 * mag) && fails++ < 5)
            printf("FAIL q8_gemm%s m %ld k %ld n %ld at %ld,%ld: %g want %g\n", trans ? "_trans" : "", long(m), long(k),
                   long(n), long(i), long(j), got[i * n + j], want);
        }
    }
  printf("%s: %d failure(s)\n", fails ? "FAILED" : "passed", fails);
  return fails != 0;
}
