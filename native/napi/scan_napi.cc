// The readers' validation loops in C++ (scan/): skipRecords(bytes, end, at, count, layout), a
// synchronous walk of length-prefixed records (~0.3 ms for a 151k-token vocabulary), and
// checkPackedTables(offsets, ids, byId, index, keys, ranks, merged) -> Promise<{ problem, filled,
// used }>, a packed tokenizer's element checks on libuv's thread pool.
#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "napi/errors.h"
#include "napi/promise_worker.h"
#include "napi/register.h"
#include "scan/packed_tables.h"
#include "scan/records.h"

namespace weightmap {

namespace {

// The largest integer a double holds exactly.
constexpr int64_t kMaxSafe = (int64_t(1) << 53) - 1;

Napi::Value SkipRecords(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    ThrowTypeError(env, "bytes must be a Uint8Array or Buffer");
  Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
  const uint64_t end = uint64_t(IntArg(info, 1, "end", 0, int64_t(bytes.ByteLength())));
  const uint64_t at = uint64_t(IntArg(info, 2, "at", 0, kMaxSafe));
  const uint64_t count = uint64_t(IntArg(info, 3, "count", 0, kMaxSafe));
  const std::string kind = info.Length() > 4 && info[4].IsString() ? info[4].As<Napi::String>().Utf8Value() : std::string();
  scan::RecordLayout layout{};
  if (kind == "u64-length") layout = {8, 0, 8};             // GGUF strings: u64 length, bytes
  else if (kind == "scored") layout = {8, 4, 4};            // ajc1 entries: f32 score, u32 length, bytes
  else ThrowTypeError(env, "layout must be 'u64-length' or 'scored'");
  const scan::RecordWalk walk = scan::SkipRecords(bytes.Data(), end, at, count, layout);
  Napi::Array out = Napi::Array::New(env, 3);
  out.Set(uint32_t(0), Napi::Number::New(env, double(walk.at)));
  out.Set(uint32_t(1), Napi::Number::New(env, double(walk.count)));
  out.Set(uint32_t(2), Napi::Number::New(env, double(walk.longest)));
  return out;
}

constexpr const char* kTableNames[] = {"offsets", "ids", "byId", "index", "keys", "ranks", "merged"};

class PackedTablesWorker : public PromiseWorker {
 public:
  PackedTablesWorker(Napi::Env env, const std::vector<Napi::TypedArray>& arrays) : PromiseWorker(env, "weightmap:checkPackedTables") {
    for (const Napi::TypedArray& a : arrays) refs_.push_back(Napi::Persistent(static_cast<Napi::Object>(a)));
    // Data() of a typed array (not of its buffer, which may be a SharedArrayBuffer): the view's first element.
    auto ints = [&](size_t i) { return static_cast<const int32_t*>(arrays[i].As<Napi::Int32Array>().Data()); };
    tables_.offsets = arrays[0].As<Napi::Uint32Array>().Data();
    tables_.ids = ints(1);
    tables_.by_id = ints(2);
    tables_.index = ints(3);
    tables_.keys = ints(4);
    tables_.ranks = ints(5);
    tables_.merged = ints(6);
    tables_.offsets_length = arrays[0].ElementLength();
    tables_.ids_length = arrays[1].ElementLength();
    tables_.by_id_length = arrays[2].ElementLength();
    tables_.index_length = arrays[3].ElementLength();
    tables_.keys_length = arrays[4].ElementLength();
    tables_.ranks_length = arrays[5].ElementLength();
    tables_.merged_length = arrays[6].ElementLength();
  }

  void Execute() override { result_ = scan::CheckPackedTables(tables_); }

 protected:
  Napi::Value Result(Napi::Env env) override {
    Napi::Object out = Napi::Object::New(env);
    out.Set("problem", result_.problem.empty() ? env.Null() : Napi::String::New(env, result_.problem));
    out.Set("filled", Napi::Number::New(env, double(result_.filled)));
    out.Set("used", Napi::Number::New(env, double(result_.used)));
    return out;
  }

 private:
  scan::PackedTables tables_{};
  scan::PackedTablesCheck result_;
  std::vector<Napi::ObjectReference> refs_;  // the arrays stay reachable while the worker reads them
};

Napi::Value CheckPackedTables(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<Napi::TypedArray> arrays;
  for (size_t i = 0; i < 7; i++) {
    const napi_typedarray_type want = i == 0 ? napi_uint32_array : napi_int32_array;
    if (info.Length() <= i || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != want)
      ThrowTypeError(env, std::string(kTableNames[i]) + (i == 0 ? " must be a Uint32Array" : " must be an Int32Array"));
    arrays.push_back(info[i].As<Napi::TypedArray>());
  }
  auto* worker = new PackedTablesWorker(env, arrays);
  return worker->Start();
}

void Register(Napi::Env env, Napi::Object exports) {
  exports.Set("skipRecords", Napi::Function::New(env, SkipRecords, "skipRecords"));
  exports.Set("checkPackedTables", Napi::Function::New(env, CheckPackedTables, "checkPackedTables"));
}

}  // namespace

WEIGHTMAP_REGISTER(scan_records, Register);

}  // namespace weightmap
