// kernel-ab.js's harness: the decode matvecs of one token of a decoder (per layer wq, wk, wv, wo,
// w_gate, w_up, w_down, then the classifier) over one buffer on 2 MB pages, through the kernels of
// two checkouts linked side by side (kernel-ab-side.cc as ab_base_* and ab_new_*), 1 thread. Per
// repetition: one pass of the addon's read probe (kernels::SumWords, the new side's) over the same
// bytes, then the base and the new kernels in turns (the order alternating), each reading every
// matrix once; the two outputs are compared bitwise. Prints one JSON object: GB/s per pass, and per pair new / base.
//   kernel-ab KIND DIM HIDDEN QDIM KVDIM LAYERS VOCAB PAIRS ISA
//   KIND: q8:GROUP (ajc1 Q8_0: int8 weights, f32 scales per GROUP), f16 (f16 weights, f32 activations)
//   or ggml:NAME:VALUES:BYTES:F16OFFS (ggml blocks: VALUES per block of BYTES bytes, its f16 factors at
//   the comma-separated offsets)
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
uint64_t ab_new_read(const uint8_t*, int64_t);
void ab_base_matvec_q8(int, const int8_t*, const float*, const int8_t*, const float*, float*, int64_t, int64_t, int);
void ab_new_matvec_q8(int, const int8_t*, const float*, const int8_t*, const float*, float*, int64_t, int64_t, int);
void ab_base_matvec_f16(int, const uint16_t*, const float*, float*, int64_t, int64_t);
void ab_new_matvec_f16(int, const uint16_t*, const float*, float*, int64_t, int64_t);
int ab_base_ggml_matvec(int, const char*, const uint8_t*, int64_t, int64_t, const int8_t*, const float*,
                        const int16_t*, float*);
int ab_new_ggml_matvec(int, const char*, const uint8_t*, int64_t, int64_t, const int8_t*, const float*,
                       const int16_t*, float*);
}

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Matrix {
  int64_t rows, cols;
  uint8_t* w;     // q8: int8 [rows, cols]; ggml: the blocks
  float* scales;  // q8 only: [rows, cols / group]
};

uint32_t Next(uint32_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 10) {
    fprintf(stderr, "usage: kernel-ab KIND DIM HIDDEN QDIM KVDIM LAYERS VOCAB PAIRS ISA\n");
    return 2;
  }
  const std::string kind = argv[1];
  const int64_t dim = atoll(argv[2]), hidden = atoll(argv[3]), qdim = atoll(argv[4]), kvdim = atoll(argv[5]);
  const int layers = atoi(argv[6]);
  const int64_t vocab = atoll(argv[7]);
  const int pairs = atoi(argv[8]);
  const int avx2 = std::string(argv[9]) == "avx2";
  const bool q8 = kind.rfind("q8:", 0) == 0, f16 = kind == "f16";
  int group = 0;
  std::string type;
  int64_t block_values = 0, block_bytes = 0;
  std::vector<int64_t> f16_offsets;
  if (q8) {
    group = atoi(kind.c_str() + 3);
  } else if (!f16) {  // ggml:NAME:VALUES:BYTES:OFFS
    std::vector<std::string> f;
    size_t at = 0;
    for (size_t c; (c = kind.find(':', at)) != std::string::npos; at = c + 1) f.push_back(kind.substr(at, c - at));
    f.push_back(kind.substr(at));
    if (f.size() != 5 || f[0] != "ggml") return fprintf(stderr, "bad KIND %s\n", kind.c_str()), 2;
    type = f[1];
    block_values = atoll(f[2].c_str());
    block_bytes = atoll(f[3].c_str());
    for (size_t a = 0, c; a < f[4].size(); a = c + 1) {
      c = f[4].find(',', a);
      if (c == std::string::npos) c = f[4].size();
      f16_offsets.push_back(atoll(f[4].substr(a, c - a).c_str()));
    }
  }
  std::vector<std::pair<int64_t, int64_t>> shapes;  // [rows, cols] in decode order
  for (int l = 0; l < layers; ++l)
    for (auto s : {std::make_pair(qdim, dim), {kvdim, dim}, {kvdim, dim}, {dim, qdim}, {hidden, dim}, {hidden, dim},
                   {dim, hidden}})
      shapes.push_back(s);
  shapes.push_back({vocab, dim});
  auto weight_bytes = [&](int64_t rows, int64_t cols) {
    return q8 ? rows * cols : f16 ? rows * cols * 2 : rows * cols / block_values * block_bytes;
  };
  auto scale_bytes = [&](int64_t rows, int64_t cols) { return q8 ? rows * cols / group * 4 : 0; };
  int64_t total = 0;
  for (auto& s : shapes) total += (weight_bytes(s.first, s.second) + scale_bytes(s.first, s.second) + 63) / 64 * 64;
  const int64_t huge = 2 << 20, mapped = (total + 2 * huge) / huge * huge;
  void* map = mmap(nullptr, mapped + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return perror("mmap"), 1;
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(map) + huge - 1) & ~uintptr_t(huge - 1));
  madvise(base, mapped, MADV_HUGEPAGE);
  uint32_t seed = 1;
  std::vector<Matrix> mats;
  int64_t off = 0;
  for (auto& s : shapes) {
    Matrix m{s.first, s.second, base + off, nullptr};
    const int64_t wb = weight_bytes(s.first, s.second);
    for (int64_t i = 0; i < wb; ++i) m.w[i] = uint8_t(Next(&seed) >> 24);
    if (q8) {
      for (int64_t i = 0; i < wb; ++i) m.w[i] = m.w[i] == 0x80 ? 0 : m.w[i];  // int8 weights in [-127, 127]
      m.scales = reinterpret_cast<float*>(base + off + wb);
      for (int64_t i = 0; i < s.first * s.second / group; ++i) m.scales[i] = 0.001f * float(1 + Next(&seed) % 16);
    } else if (f16) {  // values of magnitude 2^-4 to 2^-1 with random signs and mantissas
      uint16_t* h = reinterpret_cast<uint16_t*>(m.w);
      for (int64_t i = 0; i < wb / 2; ++i) {
        const uint32_t r = Next(&seed);
        h[i] = uint16_t((r & 0x8000) | ((11 + (r >> 16) % 4) << 10) | (r & 0x3ff));
      }
    } else {
      // f16 factors of about 2^-10 (make-gguf.js's rule): every block valid, every value finite
      for (int64_t b = 0; b < wb; b += block_bytes)
        for (int64_t o : f16_offsets) {
          const uint16_t h = uint16_t(0x1400 | (Next(&seed) & 0x3ff));
          memcpy(m.w + b + o, &h, 2);
        }
    }
    off += (wb + scale_bytes(s.first, s.second) + 63) / 64 * 64;
    mats.push_back(m);
  }
  const int64_t widest = std::max(std::max(dim, hidden), qdim);
  std::vector<int8_t> xq(widest);
  std::vector<float> xs(widest / 16 + 1, 0.02f);
  std::vector<int16_t> sums(widest / 16);
  for (int64_t i = 0; i < widest; ++i) xq[i] = int8_t(int(Next(&seed) % 255) - 127);
  for (int64_t s = 0; s < widest / 16; ++s) {
    int t = 0;
    for (int k = 0; k < 16; ++k) t += xq[s * 16 + k];
    sums[s] = int16_t(t);
  }
  std::vector<float> xf(widest);
  for (int64_t i = 0; i < widest; ++i) xf[i] = float(xq[i]) / 127.0f;
  std::vector<float> y[2] = {std::vector<float>(vocab), std::vector<float>(vocab)};
  auto pass = [&](int side) {
    for (auto& m : mats) {
      if (q8) (side ? ab_new_matvec_q8 : ab_base_matvec_q8)(avx2, reinterpret_cast<int8_t*>(m.w), m.scales, xq.data(),
                                                            xs.data(), y[side].data(), m.rows, m.cols, group);
      else if (f16) (side ? ab_new_matvec_f16 : ab_base_matvec_f16)(avx2, reinterpret_cast<uint16_t*>(m.w), xf.data(),
                                                                  y[side].data(), m.rows, m.cols);
      else if ((side ? ab_new_ggml_matvec : ab_base_ggml_matvec)(avx2, type.c_str(), m.w, m.rows, m.cols, xq.data(),
                                                                 xs.data(), sums.data(), y[side].data()) != 0)
        return false;
    }
    return true;
  };
  std::vector<double> read, gbps[2], ratio;
  bool same = true;
  volatile uint64_t sink = 0;
  for (int p = 0; p < pairs; ++p) {
    double t0 = Now();
    sink = sink + ab_new_read(base, total);
    read.push_back(double(total) / (Now() - t0) / 1e9);
    for (int k = 0; k < 2; ++k) {
      const int side = (p % 2) ? 1 - k : k;
      t0 = Now();
      if (!pass(side)) return fprintf(stderr, "unknown ggml type %s\n", type.c_str()), 2;
      gbps[side].push_back(double(total) / (Now() - t0) / 1e9);
    }
    ratio.push_back(gbps[1].back() / gbps[0].back());
    same = same && memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)) == 0;
  }
  auto list = [](const std::vector<double>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
  };
  printf("{\"kind\":\"%s\",\"isa\":\"%s\",\"megabytes\":%.1f,\"readGBps\":%s,\"baseGBps\":%s,\"newGBps\":%s,"
         "\"newOverBase\":%s,\"medianNewOverBase\":%.4f,\"medianBaseShare\":%.4f,\"medianNewShare\":%.4f,"
         "\"bitwiseSame\":%s}\n",
         kind.c_str(), avx2 ? "avx2" : "avx512vnni", total / 1e6, list(read).c_str(), list(gbps[0]).c_str(),
         list(gbps[1]).c_str(), list(ratio).c_str(), Median(ratio), Median(gbps[0]) / Median(read),
         Median(gbps[1]) / Median(read), same ? "true" : "false");
  return 0;
}
