// `kernels`: a small synchronous surface over native/kernels for tests and benchmarks (engines
// call the kernels from C++). Every entry point names the table to run ("scalar", "avx2", ...),
// and the Q8_0/gemm ones take a thread count (1 = the table's kernel on the calling thread,
// more = the parallel.h helpers over a cached ThreadPool of that size). Every length is checked
// against the shapes before any memory is touched; misuse throws TypeError/RangeError.
#include <napi.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "engines/rope.h"
#include "kernels/f32_matrix.h"
#include "kernels/ggml_blocks.h"
#include "kernels/i8_matrix.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/read_probe.h"
#include "napi/errors.h"
#include "napi/register.h"
#include "threadpool.h"

namespace weightmap {

namespace {

using kernels::KernelTable;

constexpr int kMaxThreads = 64;

// A pool per thread count, created on first use and kept for the life of the process.
ThreadPool* PoolFor(int threads) {
  static std::mutex mu;
  static ThreadPool* pools[kMaxThreads + 1] = {};
  if (threads <= 1) return nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (!pools[threads]) pools[threads] = new ThreadPool(threads);
  return pools[threads];
}

std::string AvailableList() {
  int count = 0;
  const KernelTable* const* tables = kernels::Available(&count);
  std::string names;
  for (int i = 0; i < count; ++i) names += (i ? ", " : "") + std::string(tables[i]->isa);
  return names;
}

const KernelTable& TableArg(const Napi::CallbackInfo& info, size_t i) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsString()) ThrowTypeError(env, "isa must be a string");
  const std::string name = info[i].As<Napi::String>().Utf8Value();
  const KernelTable* t = kernels::Find(name);
  if (!t) throw MakeError(env, "ERR_WEIGHTMAP_ISA", "isa '" + name + "' is not available here (available: " + AvailableList() + ")");
  return *t;
}

int ThreadsArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || info[i].IsUndefined()) return 1;
  return int(IntArg(info, i, "threads", 1, kMaxThreads));
}

float FloatArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsNumber()) ThrowTypeError(env, std::string(what) + " must be a number");
  return info[i].As<Napi::Number>().FloatValue();
}

template <class T>
struct ArrayInfo;
template <>
struct ArrayInfo<float> {
  static constexpr napi_typedarray_type kType = napi_float32_array;
  static constexpr const char* kName = "Float32Array";
};
template <>
struct ArrayInfo<int8_t> {
  static constexpr napi_typedarray_type kType = napi_int8_array;
  static constexpr const char* kName = "Int8Array";
};
template <>
struct ArrayInfo<uint8_t> {
  static constexpr napi_typedarray_type kType = napi_uint8_array;
  static constexpr const char* kName = "Uint8Array";
};
template <>
struct ArrayInfo<int16_t> {
  static constexpr napi_typedarray_type kType = napi_int16_array;
  static constexpr const char* kName = "Int16Array";
};
template <>
struct ArrayInfo<uint16_t> {
  static constexpr napi_typedarray_type kType = napi_uint16_array;
  static constexpr const char* kName = "Uint16Array";
};

template <class T>
struct Span {
  T* data;
  int64_t length;
};

// A typed array of exactly element type T and, when `expected` >= 0, exactly that length.
template <class T>
Span<T> ArrayArg(const Napi::CallbackInfo& info, size_t i, const char* what, int64_t expected) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsTypedArray() ||
      info[i].As<Napi::TypedArray>().TypedArrayType() != ArrayInfo<T>::kType)
    ThrowTypeError(env, std::string(what) + " must be a " + ArrayInfo<T>::kName);
  Napi::TypedArrayOf<T> a = info[i].As<Napi::TypedArrayOf<T>>();
  const int64_t length = int64_t(a.ElementLength());
  if (expected >= 0 && length != expected)
    ThrowRange(env, std::string(what) + " has " + std::to_string(length) + " elements, expected " + std::to_string(expected));
  return Span<T>{a.Data(), length};
}

// a·b, or a RangeError when the product passes 2^53 (no typed array is that long).
int64_t Mul(Napi::Env env, int64_t a, int64_t b) {
  if (a != 0 && b > (int64_t(1) << 53) / a) ThrowRange(env, "shape too large");
  return a * b;
}

constexpr int64_t kMaxDim = int64_t(1) << 40;

// A Float32Array bias of n values at info[i], or null / undefined for none.
const float* BiasArg(const Napi::CallbackInfo& info, size_t i, int64_t n) {
  if (info.Length() <= i || info[i].IsNull() || info[i].IsUndefined()) return nullptr;
  return ArrayArg<float>(info, i, "bias", n).data;
}

void CheckActivations(Napi::Env env, Span<int8_t> xq) {
  for (int64_t i = 0; i < xq.length; ++i)
    if (xq.data[i] == -128) ThrowRange(env, "xq must lie in [-127, 127] (as quantizeQ8 produces)");
}

// ---------------------------------------------------------------- isa
Napi::Value Isa(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), kernels::Active().isa); }

Napi::Value AvailableIsas(const Napi::CallbackInfo& info) {
  int count = 0;
  const KernelTable* const* tables = kernels::Available(&count);
  Napi::Array out = Napi::Array::New(info.Env(), size_t(count));
  for (int i = 0; i < count; ++i) out.Set(uint32_t(i), Napi::String::New(info.Env(), tables[i]->isa));
  return out;
}

Napi::Value SetIsa(const Napi::CallbackInfo& info) {
  const KernelTable& t = TableArg(info, 0);
  kernels::SetIsa(t.isa);
  return info.Env().Undefined();
}

Napi::Value EmptySlots(const Napi::CallbackInfo& info) {
  const std::vector<std::string> empty = kernels::EmptySlots(TableArg(info, 0));
  Napi::Array out = Napi::Array::New(info.Env(), empty.size());
  for (size_t i = 0; i < empty.size(); ++i) out.Set(uint32_t(i), Napi::String::New(info.Env(), empty[i]));
  return out;
}

Napi::Value PhysicalCores(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), ThreadPool::PhysicalCores());
}

// ---------------------------------------------------------------- Q8_0
// quantizeQ8(isa, x, group, q, s)
Napi::Value QuantizeQ8(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KernelTable& t = TableArg(info, 0);
  auto x = ArrayArg<float>(info, 1, "x", -1);
  const int group = int(IntArg(info, 2, "group", 1, 1 << 20));
  if (x.length % group != 0) ThrowRange(env, "x.length must be a multiple of group");
  auto q = ArrayArg<int8_t>(info, 3, "q", x.length);
  auto s = ArrayArg<float>(info, 4, "s", x.length / group);
  t.quantize_q8(x.data, x.length, group, q.data, s.data);
  return env.Undefined();
}

struct Q8Args {
  Span<int8_t> wq, xq;
  Span<float> ws, xs, y;
  int64_t m, rows, cols;
  int group;
};

// (isa, wq, ws, xq, xs, y, [m,] rows, cols, group, threads)
Q8Args ParseQ8(const Napi::CallbackInfo& info, bool batched) {
  Napi::Env env = info.Env();
  Q8Args a;
  size_t i = 6;
  a.m = batched ? IntArg(info, i++, "m", 1, kMaxDim) : 1;
  a.rows = IntArg(info, i++, "rows", 0, kMaxDim);
  a.cols = IntArg(info, i++, "cols", 0, kMaxDim);
  a.group = int(IntArg(info, i++, "group", 1, 1 << 20));
  if (a.cols % a.group != 0) ThrowRange(env, "cols must be a multiple of group");
  const int64_t groups = a.cols / a.group;
  a.wq = ArrayArg<int8_t>(info, 1, "wq", Mul(env, a.rows, a.cols));
  a.ws = ArrayArg<float>(info, 2, "ws", Mul(env, a.rows, groups));
  a.xq = ArrayArg<int8_t>(info, 3, "xq", Mul(env, a.m, a.cols));
  a.xs = ArrayArg<float>(info, 4, "xs", Mul(env, a.m, groups));
  a.y = ArrayArg<float>(info, 5, "y", Mul(env, a.m, a.rows));
  CheckActivations(env, a.xq);
  return a;
}

Napi::Value MatvecQ8(const Napi::CallbackInfo& info) {
  const KernelTable& t = TableArg(info, 0);
  Q8Args a = ParseQ8(info, false);
  const int threads = ThreadsArg(info, 10);
  if (threads == 1) t.matvec_q8(a.wq.data, a.ws.data, a.xq.data, a.xs.data, a.y.data, a.cols, a.group, 0, a.rows);
  else kernels::MatvecQ8(PoolFor(threads), t, a.wq.data, a.ws.data, a.xq.data, a.xs.data, a.y.data, a.rows, a.cols, a.group);
  return info.Env().Undefined();
}

Napi::Value MatmulQ8(const Napi::CallbackInfo& info) {
  const KernelTable& t = TableArg(info, 0);
  Q8Args a = ParseQ8(info, true);
  const int threads = ThreadsArg(info, 11);
  if (threads == 1)
    t.matmul_q8(a.wq.data, a.ws.data, a.xq.data, a.xs.data, a.y.data, a.m, a.cols, a.rows, a.group, 0, a.rows);
  else
    kernels::MatmulQ8(PoolFor(threads), t, a.wq.data, a.ws.data, a.xq.data, a.xs.data, a.y.data, a.m, a.rows, a.cols,
                      a.rows, a.group);
  return info.Env().Undefined();
}

// matvecQ8Rows(isa, wq, ws, xq, xs, y, m, rows, cols, group, r0, r1): rows [r0, r1) of y [m, rows],
// one thread (the row range is the kernel's own argument).
Napi::Value MatvecQ8Rows(const Napi::CallbackInfo& info) {
  const KernelTable& t = TableArg(info, 0);
  Q8Args a = ParseQ8(info, true);
  const int64_t r0 = IntArg(info, 10, "r0", 0, a.rows);
  const int64_t r1 = IntArg(info, 11, "r1", r0, a.rows);
  t.matvec_q8_rows(a.wq.data, a.ws.data, a.xq.data, a.xs.data, a.y.data, a.m, a.cols, a.rows, a.group, r0, r1);
  return info.Env().Undefined();
}

// matvecQ8Prepared(isa, wq, ws, xq, xs, y, m, rows, cols, group, r0, r1): the same rows through the
// split form, as a batched step runs it: q8_rows_prepare once, then matvec_q8_prepared over
// [r0, mid) and [mid, r1) (two threads' blocks) from that one prepared copy.
Napi::Value MatvecQ8Prepared(const Napi::CallbackInfo& info) {
  const KernelTable& t = TableArg(info, 0);
  Q8Args a = ParseQ8(info, true);
  const int64_t r0 = IntArg(info, 10, "r0", 0, a.rows);
  const int64_t r1 = IntArg(info, 11, "r1", r0, a.rows);
  std::vector<uint8_t> buffer(size_t(t.q8_rows_prep_bytes(a.m, a.cols, a.group)) + 64);
  uint8_t* prep = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;
  t.q8_rows_prepare(a.xq.data, a.xs.data, a.m, a.cols, a.group, prep);
  const int64_t mid = r0 + (r1 - r0) / 2;
  t.matvec_q8_prepared(a.wq.data, a.ws.data, prep, a.y.data, a.m, a.cols, a.rows, a.group, r0, mid);
  t.matvec_q8_prepared(a.wq.data, a.ws.data, prep, a.y.data, a.m, a.cols, a.rows, a.group, mid, r1);
  return info.Env().Undefined();
}

// ---------------------------------------------------------------- per-channel int8
// quantizeI8(isa, x [m·k], m, k, ldq, q [m·ldq], s [m]): the table's quantize_i8, its bytes
// decoded (minus the table's i8_zero) into q, padding included.
Napi::Value QuantizeI8(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KernelTable& t = TableArg(info, 0);
  const int64_t m = IntArg(info, 2, "m", 1, kMaxDim);
  const int64_t k = IntArg(info, 3, "k", 1, kMaxDim);
  const int64_t ldq = IntArg(info, 4, "ldq", k, kMaxDim);
  auto x = ArrayArg<float>(info, 1, "x", Mul(env, m, k));
  auto q = ArrayArg<int8_t>(info, 5, "q", Mul(env, m, ldq));
  auto s = ArrayArg<float>(info, 6, "s", m);
  std::vector<uint8_t> encoded(size_t(m * ldq), uint8_t(0x55));
  t.quantize_i8(x.data, m, k, encoded.data(), ldq, s.data);
  for (int64_t i = 0; i < m * ldq; ++i) q.data[i] = int8_t(uint8_t(encoded[size_t(i)] - t.i8_zero));
  return env.Undefined();
}

// gemmI8(isa, wq [n·k], ws [n], xq [m·k], xs [m], bias [n] | null, y [m·n], m, n, k, threads,
// repeat = 1) -> seconds: packs W with I8Matrix, encodes xq as the table's quantize_i8 would (plus
// i8_zero), then runs gemm_i8 `repeat` times over rows padded to a stride of k4 + 8 bytes whose
// padding is NOT zero (the contract says it is read but meets zero weights). Returns the time of
// the gemm_i8 runs alone (benchmarks).
Napi::Value GemmI8(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KernelTable& t = TableArg(info, 0);
  const int64_t m = IntArg(info, 7, "m", 1, kMaxDim);
  const int64_t n = IntArg(info, 8, "n", 1, kMaxDim);
  const int64_t k = IntArg(info, 9, "k", 1, 65536);
  const int threads = ThreadsArg(info, 10);
  const int64_t repeat = info.Length() > 11 && !info[11].IsUndefined() ? IntArg(info, 11, "repeat", 1, 1 << 20) : 1;
  auto wq = ArrayArg<int8_t>(info, 1, "wq", Mul(env, n, k));
  auto ws = ArrayArg<float>(info, 2, "ws", n);
  auto xq = ArrayArg<int8_t>(info, 3, "xq", Mul(env, m, k));
  auto xs = ArrayArg<float>(info, 4, "xs", m);
  const float* bias = BiasArg(info, 5, n);
  auto y = ArrayArg<float>(info, 6, "y", Mul(env, m, n));
  CheckActivations(env, xq);
  kernels::I8Matrix w(n, k);
  for (int64_t j = 0; j < n; ++j) w.SetRow(j, wq.data + j * k, ws.data[j]);
  const kernels::I8Weights view = w.view();
  const int64_t ldx = view.k4 + 8;
  std::vector<uint8_t> x(size_t(m * ldx), uint8_t(0x55));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < k; ++c) x[size_t(i * ldx + c)] = uint8_t(uint8_t(xq.data[i * k + c]) + t.i8_zero);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < repeat; ++r) {
    if (threads == 1)
      t.gemm_i8(x.data(), xs.data, m, ldx, view, bias, y.data, n, 0, view.panels());
    else
      kernels::GemmI8(PoolFor(threads), t, x.data(), xs.data, m, ldx, view, bias, y.data, n);
  }
  return Napi::Number::New(env, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// sgemmPacked(isa, x [m·k], w [n·k] (rows = output channels), bias [n] | null, y [m·n], m, n, k,
// threads): packs W with F32Matrix, then y = x·Wᵀ + bias.
Napi::Value SgemmPacked(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KernelTable& t = TableArg(info, 0);
  const int64_t m = IntArg(info, 5, "m", 1, kMaxDim);
  const int64_t n = IntArg(info, 6, "n", 1, kMaxDim);
  const int64_t k = IntArg(info, 7, "k", 1, kMaxDim);
  const int threads = ThreadsArg(info, 8);
  auto x = ArrayArg<float>(info, 1, "x", Mul(env, m, k));
  auto wf = ArrayArg<float>(info, 2, "w", Mul(env, n, k));
  const float* bias = BiasArg(info, 3, n);
  auto y = ArrayArg<float>(info, 4, "y", Mul(env, m, n));
  kernels::F32Matrix w(n, k);
  for (int64_t j = 0; j < n; ++j) w.SetRow(j, wf.data + j * k);
  const kernels::F32Panels view = w.view();
  if (threads == 1) t.sgemm_packed(x.data, m, view, bias, y.data, n, 0, view.panels());
  else kernels::SgemmPacked(PoolFor(threads), t, x.data, m, view, bias, y.data, n);
  return env.Undefined();
}

// ---------------------------------------------------------------- gemms
// (isa, a [m,k], b, c [m,n], m, k, n, threads); b is [k,n] or [n,k] (same length).
template <class BT, bool Trans>
Napi::Value Gemm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KernelTable& t = TableArg(info, 0);
  const int64_t m = IntArg(info, 4, "m", 0, kMaxDim);
  const int64_t k = IntArg(info, 5, "k", 0, kMaxDim);
  const int64_t n = IntArg(info, 6, "n", 0, kMaxDim);
  auto a = ArrayArg<float>(info, 1, "a", Mul(env, m, k));
  auto b = ArrayArg<BT>(info, 2, "b", Mul(env, k, n));
  auto c = ArrayArg<float>(info, 3, "c", Mul(env, m, n));
  const int threads = ThreadsArg(info, 7);
  ThreadPool* pool = PoolFor(threads);
  if constexpr (std::is_same<BT, uint16_t>::value) {
    if (Trans) kernels::HgemmTrans(pool, t, a.data, b.data, c.data, m, k, n);
    else kernels::Hgemm(pool, t, a.data, b.data, c.data, m, k, n);
  } else {
    if (Trans) kernels::SgemmTrans(pool, t, a.data, b.data, c.data, m, k, n);
    else kernels::Sgemm(pool, t, a.data, b.data, c.data, m, k, n);
  }
  return env.Undefined();
}

// (isa, a [m,k], bq, bs, group, c [m,n], m, k, n): b is q8_0, int8 [k,n] (q8Gemm) or [n,k]
// (q8GemmTrans) with one scale per `group` values of a row; one thread (a kernel of one KV head).
template <bool Trans>
Napi::Value Q8Gemm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KernelTable& t = TableArg(info, 0);
  const int64_t group = IntArg(info, 4, "group", 1, kMaxDim);
  const int64_t m = IntArg(info, 6, "m", 0, kMaxDim);
  const int64_t k = IntArg(info, 7, "k", 0, kMaxDim);
  const int64_t n = IntArg(info, 8, "n", 0, kMaxDim);
  if ((Trans ? k : n) % group != 0) ThrowRange(env, "group must divide the length of b's rows");
  auto a = ArrayArg<float>(info, 1, "a", Mul(env, m, k));
  auto bq = ArrayArg<int8_t>(info, 2, "bq", Mul(env, k, n));
  auto bs = ArrayArg<float>(info, 3, "bs", Mul(env, k, n) / group);
  auto c = ArrayArg<float>(info, 5, "c", Mul(env, m, n));
  if (Trans) t.q8_gemm_trans(a.data, bq.data, bs.data, group, c.data, m, k, n, 0, n);
  else t.q8_gemm(a.data, bq.data, bs.data, group, c.data, m, k, n, 0, n);
  return env.Undefined();
}

// ---------------------------------------------------------------- conversions, level 1
Napi::Value F16ToF32(const Napi::CallbackInfo& info) {
  const KernelTable& t = TableArg(info, 0);
  auto x = ArrayArg<uint16_t>(info, 1, "x", -1);
  auto y = ArrayArg<float>(info, 2, "y", x.length);
  t.f16_to_f32(x.data, y.data, x.length);
  return info.Env().Undefined();
}

Napi::Value Bf16ToF32(const Napi::CallbackInfo& info) {
  const KernelTable& t = TableArg(info, 0);
  auto x = ArrayArg<uint16_t>(info, 1, "x", -1);
  auto y = ArrayArg<float>(info, 2, "y", x.length);
  t.bf16_to_f32(x.data, y.data, x.length);
  return info.Env().Undefined();
}

Napi::Value F32ToF16(const Napi::CallbackInfo& info) {
  const KernelTable& t = TableArg(info, 0);
  auto x = ArrayArg<float>(info, 1, "x", -1);
  auto y = ArrayArg<uint16_t>(info, 2, "y", x.length);
  t.f32_to_f16(x.data, y.data, x.length);
  return info.Env().Undefined();
}

Napi::Value DotF32(const Napi::CallbackInfo& info) {
  const KernelTable& t = TableArg(info, 0);
  auto a = ArrayArg<float>(info, 1, "a", -1);
  auto b = ArrayArg<float>(info, 2, "b", a.length);
  return Napi::Number::New(info.Env(), t.dot_f32(a.data, b.data, a.length));
}

Napi::Value AxpyF32(const Napi::CallbackInfo& info) {
  const KernelTable& t = TableArg(info, 0);
  const float alpha = FloatArg(info, 1, "alpha");
  auto x = ArrayArg<float>(info, 2, "x", -1);
  auto y = ArrayArg<float>(info, 3, "y", x.length);
  t.axpy_f32(alpha, x.data, y.data, x.length);
  return info.Env().Undefined();
}

// ---------------------------------------------------------------- row kernels
Napi::Value Rmsnorm(const Napi::CallbackInfo& info) {  // (x, w, y, eps)
  auto x = ArrayArg<float>(info, 0, "x", -1);
  if (x.length == 0) ThrowRange(info.Env(), "x must not be empty");
  auto w = ArrayArg<float>(info, 1, "w", x.length);
  auto y = ArrayArg<float>(info, 2, "y", x.length);
  kernels::rmsnorm(x.data, w.data, y.data, x.length, FloatArg(info, 3, "eps"));
  return info.Env().Undefined();
}

Napi::Value Layernorm(const Napi::CallbackInfo& info) {  // (x, g, b | null, y, eps)
  auto x = ArrayArg<float>(info, 0, "x", -1);
  if (x.length == 0) ThrowRange(info.Env(), "x must not be empty");
  auto g = ArrayArg<float>(info, 1, "g", x.length);
  const float* b = nullptr;
  if (info.Length() > 2 && !info[2].IsNull() && !info[2].IsUndefined()) b = ArrayArg<float>(info, 2, "b", x.length).data;
  auto y = ArrayArg<float>(info, 3, "y", x.length);
  kernels::layernorm(x.data, g.data, b, y.data, x.length, FloatArg(info, 4, "eps"));
  return info.Env().Undefined();
}

Napi::Value Softmax(const Napi::CallbackInfo& info) {  // (x) in place
  auto x = ArrayArg<float>(info, 0, "x", -1);
  kernels::softmax(x.data, x.length);
  return info.Env().Undefined();
}

Napi::Value ExpSum(const Napi::CallbackInfo& info) {  // (x, scale, shift) in place -> Σ
  auto x = ArrayArg<float>(info, 0, "x", -1);
  const float scale = FloatArg(info, 1, "scale"), shift = FloatArg(info, 2, "shift");
  return Napi::Number::New(info.Env(), kernels::exp_sum(x.data, x.length, scale, shift));
}

// (isa, q, k, v, out, T, hd, ld, scale): one head of [T, ld] matrices at column 0 (ld >= hd).
Napi::Value Attention(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KernelTable& t = TableArg(info, 0);
  const int64_t T = IntArg(info, 5, "T", 1, 1 << 20);
  const int64_t hd = IntArg(info, 6, "hd", 1, 1 << 16);
  const int64_t ld = IntArg(info, 7, "ld", hd, 1 << 20);
  const float scale = FloatArg(info, 8, "scale");
  if (!(scale > 0)) ThrowRange(env, "scale must be positive");
  const int64_t n = Mul(env, T, ld);
  auto q = ArrayArg<float>(info, 1, "q", n);
  auto k = ArrayArg<float>(info, 2, "k", n);
  auto v = ArrayArg<float>(info, 3, "v", n);
  auto out = ArrayArg<float>(info, 4, "out", n);
  std::vector<float> scratch(size_t(kernels::AttentionScratch(T, hd)));
  t.attention(q.data, k.data, v.data, out.data, T, hd, ld, scale, scratch.data());
  return env.Undefined();
}

Napi::Value SiluMul(const Napi::CallbackInfo& info) {  // (gate, up, y)
  auto gate = ArrayArg<float>(info, 0, "gate", -1);
  auto up = ArrayArg<float>(info, 1, "up", gate.length);
  auto y = ArrayArg<float>(info, 2, "y", gate.length);
  kernels::silu_mul(gate.data, up.data, y.data, gate.length);
  return info.Env().Undefined();
}

Napi::Value GeluTanh(const Napi::CallbackInfo& info) {
  auto x = ArrayArg<float>(info, 0, "x", -1);
  kernels::gelu_tanh(x.data, x.length);
  return info.Env().Undefined();
}

Napi::Value GeluErf(const Napi::CallbackInfo& info) {
  auto x = ArrayArg<float>(info, 0, "x", -1);
  kernels::gelu_erf(x.data, x.length);
  return info.Env().Undefined();
}

// (x, rotDim, pos, theta, interleaved, factors?): the engines' RoPE (engines/rope.h) on one head.
Napi::Value Rope(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto x = ArrayArg<float>(info, 0, "x", -1);
  const int64_t rot_dim = IntArg(info, 1, "rotDim", 0, x.length);
  if (rot_dim % 2 != 0) ThrowRange(env, "rotDim must be even");
  const int64_t pos = IntArg(info, 2, "pos", 0, int64_t(1) << 31);
  const float theta = FloatArg(info, 3, "theta");
  if (!(theta > 0.0f) || !std::isfinite(theta)) ThrowRange(env, "theta must be a positive finite number");
  if (info.Length() <= 4 || !info[4].IsBoolean()) ThrowTypeError(env, "interleaved must be a boolean");
  engines::Rope rope{rot_dim, theta, info[4].As<Napi::Boolean>().Value(), nullptr};
  if (info.Length() > 5 && !info[5].IsUndefined()) rope.factors = ArrayArg<float>(info, 5, "factors", rot_dim / 2).data;
  std::vector<float> cs(static_cast<size_t>(rot_dim));
  rope.Angles(pos, cs.data());
  rope.Rotate(x.data, cs.data());
  return env.Undefined();
}

// ---------------------------------------------------------------- thread pool
// threadPoolChunks(n, grain, threads) -> [begin, end, begin, end, ...]: the chunks one
// ParallelFor call handed out, in the order they finished (tests of the pool's contract).
Napi::Value ThreadPoolChunks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t n = IntArg(info, 0, "n", 0, int64_t(1) << 32);
  const int64_t grain = IntArg(info, 1, "grain", 1, int64_t(1) << 32);
  const int threads = int(IntArg(info, 2, "threads", 2, kMaxThreads));
  std::mutex mu;
  std::vector<int64_t> chunks;
  PoolFor(threads)->ParallelFor(n, grain, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    chunks.push_back(b);
    chunks.push_back(e);
  });
  Napi::Array out = Napi::Array::New(env, chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) out.Set(uint32_t(i), Napi::Number::New(env, double(chunks[i])));
  return out;
}

// threadPoolRowBlocks(n, grain, threads, waitUs): the blocks of one kernels::ParallelRowBlocks,
// flattened [begin, end, thread, ...] in the order they started (thread: 0, 1, ... in the order
// the threads first appeared). The block that starts at 0 stalls its thread until another thread
// has taken a block of the rest of the first range [0, n / threads), or for waitUs µs at most:
// with work stealing the wait ends as soon as a thread is scheduled, whatever the machine's load.
Napi::Value ThreadPoolRowBlocks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t n = IntArg(info, 0, "n", 0, int64_t(1) << 32);
  const int64_t grain = IntArg(info, 1, "grain", 1, int64_t(1) << 32);
  const int threads = int(IntArg(info, 2, "threads", 1, kMaxThreads));
  const int64_t wait_us = info.Length() > 3 ? IntArg(info, 3, "waitUs", 0, 60000000) : 0;
  std::mutex mu;
  std::vector<int64_t> blocks;
  std::vector<std::thread::id> ids;
  auto stolen = [&](size_t stalled) {  // under mu
    for (size_t i = 0; i < blocks.size(); i += 3)
      if (blocks[i] > 0 && blocks[i] < n / threads && size_t(blocks[i + 2]) != stalled) return true;
    return false;
  };
  kernels::ParallelRowBlocks(PoolFor(threads), n, grain, [&](int64_t b, int64_t e) {
    size_t t = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      const auto id = std::this_thread::get_id();
      while (t < ids.size() && ids[t] != id) ++t;
      if (t == ids.size()) ids.push_back(id);
      blocks.push_back(b);
      blocks.push_back(e);
      blocks.push_back(int64_t(t));
    }
    if (b == 0 && wait_us > 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(wait_us);
      while (std::chrono::steady_clock::now() < until) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (stolen(t)) break;
        }
        std::this_thread::yield();
      }
    }
  });
  Napi::Array out = Napi::Array::New(env, blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) out.Set(uint32_t(i), Napi::Number::New(env, double(blocks[i])));
  return out;
}

// ---------------------------------------------------------------- bandwidth probe
volatile uint64_t bandwidth_sink;

// readBandwidth(view, threads, passes, prefetch = 0) -> seconds for `passes` full reads of the
// view's bytes, split across `threads` threads in contiguous ranges (integer sums of 8-byte words
// with the widest loads of the active ISA, so the loads cannot be skipped; kernels/read_probe.h),
// with software prefetches `prefetch` bytes ahead when > 0.
Napi::Value ReadBandwidth(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray()) ThrowTypeError(env, "view must be a typed array");
  Napi::TypedArray view = info[0].As<Napi::TypedArray>();
  const uint8_t* base = static_cast<const uint8_t*>(view.ArrayBuffer().Data()) + view.ByteOffset();
  const int64_t words = int64_t(view.ByteLength() / 8);
  const int threads = int(IntArg(info, 1, "threads", 1, kMaxThreads));
  const int64_t passes = IntArg(info, 2, "passes", 1, 1 << 20);
  const int64_t prefetch = info.Length() > 3 && !info[3].IsUndefined() ? IntArg(info, 3, "prefetch", 0, 1 << 20) : 0;
  ThreadPool* pool = PoolFor(threads);
  std::atomic<uint64_t> total{0};
  auto body = [&](int64_t w0, int64_t w1) {
    total.fetch_add(kernels::SumWords(base, w0, w1, prefetch), std::memory_order_relaxed);
  };
  const auto start = std::chrono::steady_clock::now();
  for (int64_t p = 0; p < passes; ++p) {
    if (pool) pool->ParallelFor(words, 1024, body);
    else body(0, words);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bandwidth_sink = total.load();
  return Napi::Number::New(env, seconds);
}

// ---------------------------------------------------------------- ggml blocks
kernels::BlockType BlockTypeArg(const Napi::CallbackInfo& info, size_t i) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsString()) ThrowTypeError(env, "type must be a string");
  const std::string name = info[i].As<Napi::String>().Utf8Value();
  kernels::BlockType type;
  if (!kernels::BlockTypeFromName(name.c_str(), &type)) ThrowTypeError(env, "unknown ggml block type '" + name + "'");
  return type;
}

// Values of `bytes` bytes of `type` blocks; RangeError unless they are whole blocks.
int64_t BlockValues(Napi::Env env, kernels::BlockType type, int64_t bytes) {
  const kernels::BlockInfo& b = kernels::InfoOf(type);
  if (bytes % b.bytes != 0) ThrowRange(env, "blocks must be a whole number of " + std::to_string(b.bytes) + "-byte blocks");
  return bytes / b.bytes * b.values;
}

// dequantizeBlocks(type, blocks, x)
Napi::Value DequantizeBlocks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const kernels::BlockType type = BlockTypeArg(info, 0);
  auto blocks = ArrayArg<uint8_t>(info, 1, "blocks", -1);
  auto x = ArrayArg<float>(info, 2, "x", BlockValues(env, type, blocks.length));
  kernels::DequantizeBlocks(type, blocks.data, x.data, x.length);
  return env.Undefined();
}

// quantizeAct(isa, x, q, d, sum)
Napi::Value QuantizeAct(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KernelTable& t = TableArg(info, 0);
  auto x = ArrayArg<float>(info, 1, "x", -1);
  if (x.length % kernels::kActBlock != 0) ThrowRange(env, "x.length must be a multiple of 32");
  auto q = ArrayArg<int8_t>(info, 2, "q", x.length);
  auto d = ArrayArg<float>(info, 3, "d", x.length / kernels::kActBlock);
  auto sum = ArrayArg<int16_t>(info, 4, "sum", x.length / 16);
  t.ggml.quantize_act(x.data, x.length, q.data, d.data, sum.data);
  return env.Undefined();
}

// ggmlMatmul(isa, type, w, xq, xd, xsum, y, m, rows, n, threads)
Napi::Value GgmlMatmul(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KernelTable& t = TableArg(info, 0);
  const kernels::BlockType type = BlockTypeArg(info, 1);
  const int64_t m = IntArg(info, 7, "m", 1, kMaxDim);
  const int64_t rows = IntArg(info, 8, "rows", 0, kMaxDim);
  const int64_t n = IntArg(info, 9, "n", 1, kMaxDim);
  const int threads = ThreadsArg(info, 10);
  if (n % kernels::InfoOf(type).values != 0) ThrowRange(env, "n must be a multiple of the block size");
  auto w = ArrayArg<uint8_t>(info, 2, "w", Mul(env, rows, kernels::RowBytes(type, n)));
  auto xq = ArrayArg<int8_t>(info, 3, "xq", Mul(env, m, n));
  auto xd = ArrayArg<float>(info, 4, "xd", Mul(env, m, n / kernels::kActBlock));
  auto xsum = ArrayArg<int16_t>(info, 5, "xsum", Mul(env, m, n / 16));
  auto y = ArrayArg<float>(info, 6, "y", Mul(env, m, rows));
  CheckActivations(env, xq);
  kernels::Q8Act x;
  x.m = m, x.n = n, x.q = xq.data, x.d = xd.data, x.sum = xsum.data;
  auto fn = t.ggml.matmul[static_cast<int>(type)];
  ThreadPool* pool = PoolFor(threads);
  if (pool) pool->ParallelFor(rows, 1, [&](int64_t r0, int64_t r1) { fn(w.data, x, y.data, rows, r0, r1); });
  else fn(w.data, x, y.data, rows, 0, rows);
  return env.Undefined();
}

void Register(Napi::Env env, Napi::Object exports) {
  Napi::Object k = Napi::Object::New(env);
  k.Set("isa", Napi::Function::New(env, Isa, "isa"));
  k.Set("availableIsas", Napi::Function::New(env, AvailableIsas, "availableIsas"));
  k.Set("setIsa", Napi::Function::New(env, SetIsa, "setIsa"));
  k.Set("emptySlots", Napi::Function::New(env, EmptySlots, "emptySlots"));
  k.Set("physicalCores", Napi::Function::New(env, PhysicalCores, "physicalCores"));
  k.Set("quantizeQ8", Napi::Function::New(env, QuantizeQ8, "quantizeQ8"));
  k.Set("matvecQ8", Napi::Function::New(env, MatvecQ8, "matvecQ8"));
  k.Set("matvecQ8Rows", Napi::Function::New(env, MatvecQ8Rows, "matvecQ8Rows"));
  k.Set("matvecQ8Prepared", Napi::Function::New(env, MatvecQ8Prepared, "matvecQ8Prepared"));
  k.Set("matmulQ8", Napi::Function::New(env, MatmulQ8, "matmulQ8"));
  k.Set("dequantizeBlocks", Napi::Function::New(env, DequantizeBlocks, "dequantizeBlocks"));
  k.Set("quantizeAct", Napi::Function::New(env, QuantizeAct, "quantizeAct"));
  k.Set("ggmlMatmul", Napi::Function::New(env, GgmlMatmul, "ggmlMatmul"));
  k.Set("quantizeI8", Napi::Function::New(env, QuantizeI8, "quantizeI8"));
  k.Set("gemmI8", Napi::Function::New(env, GemmI8, "gemmI8"));
  k.Set("sgemmPacked", Napi::Function::New(env, SgemmPacked, "sgemmPacked"));
  k.Set("hgemm", Napi::Function::New(env, Gemm<uint16_t, false>, "hgemm"));
  k.Set("hgemmTrans", Napi::Function::New(env, Gemm<uint16_t, true>, "hgemmTrans"));
  k.Set("sgemm", Napi::Function::New(env, Gemm<float, false>, "sgemm"));
  k.Set("sgemmTrans", Napi::Function::New(env, Gemm<float, true>, "sgemmTrans"));
  k.Set("q8Gemm", Napi::Function::New(env, Q8Gemm<false>, "q8Gemm"));
  k.Set("q8GemmTrans", Napi::Function::New(env, Q8Gemm<true>, "q8GemmTrans"));
  k.Set("f16ToF32", Napi::Function::New(env, F16ToF32, "f16ToF32"));
  k.Set("f32ToF16", Napi::Function::New(env, F32ToF16, "f32ToF16"));
  k.Set("bf16ToF32", Napi::Function::New(env, Bf16ToF32, "bf16ToF32"));
  k.Set("dotF32", Napi::Function::New(env, DotF32, "dotF32"));
  k.Set("axpyF32", Napi::Function::New(env, AxpyF32, "axpyF32"));
  k.Set("rmsnorm", Napi::Function::New(env, Rmsnorm, "rmsnorm"));
  k.Set("layernorm", Napi::Function::New(env, Layernorm, "layernorm"));
  k.Set("softmax", Napi::Function::New(env, Softmax, "softmax"));
  k.Set("expSum", Napi::Function::New(env, ExpSum, "expSum"));
  k.Set("attention", Napi::Function::New(env, Attention, "attention"));
  k.Set("siluMul", Napi::Function::New(env, SiluMul, "siluMul"));
  k.Set("geluTanh", Napi::Function::New(env, GeluTanh, "geluTanh"));
  k.Set("geluErf", Napi::Function::New(env, GeluErf, "geluErf"));
  k.Set("rope", Napi::Function::New(env, Rope, "rope"));
  k.Set("threadPoolChunks", Napi::Function::New(env, ThreadPoolChunks, "threadPoolChunks"));
  k.Set("threadPoolRowBlocks", Napi::Function::New(env, ThreadPoolRowBlocks, "threadPoolRowBlocks"));
  k.Set("readBandwidth", Napi::Function::New(env, ReadBandwidth, "readBandwidth"));
  exports.Set("kernels", k);
}

}  // namespace

WEIGHTMAP_REGISTER(kernels, Register);

}  // namespace weightmap
