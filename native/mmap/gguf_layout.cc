#include "mmap/gguf_layout.h"

#include <algorithm>
#include <cstring>

#include "scan/records.h"

namespace weightmap {

namespace {

class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  bool ok() const { return ok_; }
  uint64_t at() const { return at_; }

  template <typename T>
  T Read() {
    T v{};
    if (!Has(sizeof(T))) return v;
    std::memcpy(&v, data_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  void Skip(uint64_t n) {
    if (Has(n)) at_ += n;
  }
  // `count` strings (u64 length, bytes) one after the other: the vocabulary's 151k, in one walk.
  void SkipStrings(uint64_t count) {
    if (!ok_) return;
    const scan::RecordWalk walk = scan::SkipRecords(data_, size_, at_, count, {8, 0, 8});
    if (walk.count == count) at_ = walk.at;
    else ok_ = false;
  }
  std::string String() {
    const uint64_t n = Read<uint64_t>();
    if (!Has(n)) return {};
    std::string s(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return s;
  }

 private:
  bool Has(uint64_t n) {
    if (ok_ && n <= size_ - at_) return true;
    ok_ = false;
    return false;
  }
  const uint8_t* data_;
  uint64_t size_;
  uint64_t at_ = 0;
  bool ok_ = true;
};

enum : uint32_t { kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };

uint64_t ScalarBytes(uint32_t type) {
  switch (type) {
    case kU8: case kI8: case kBool: return 1;
    case kU16: case kI16: return 2;
    case kU32: case kI32: case kF32: return 4;
    case kU64: case kI64: case kF64: return 8;
    default: return 0;
  }
}

bool SkipValue(Cursor& c, uint32_t type, int depth) {
  if (const uint64_t n = ScalarBytes(type)) {
    c.Skip(n);
  } else if (type == kString) {
    c.Skip(c.Read<uint64_t>());
  } else if (type == kArray && depth < 2) {
    const uint32_t elem = c.Read<uint32_t>();
    const uint64_t count = c.Read<uint64_t>();
    if (const uint64_t n = ScalarBytes(elem)) {
      if (count > UINT64_MAX / n) return false;
      c.Skip(count * n);
    } else if (elem == kString) {
      c.SkipStrings(count);
    } else {
      for (uint64_t i = 0; i < count && c.ok(); i++)
        if (!SkipValue(c, elem, depth + 1)) return false;
    }
  } else {
    return false;
  }
  return c.ok();
}

}  // namespace

bool ReadGgufTensorSpans(const uint8_t* data, uint64_t size, std::vector<GgufTensorSpan>* out) {
  out->clear();
  Cursor c(data, size);
  const uint32_t magic = c.Read<uint32_t>();
  const uint32_t version = c.Read<uint32_t>();
  const uint64_t n_tensors = c.Read<uint64_t>();
  const uint64_t n_kv = c.Read<uint64_t>();
  // Each tensor info takes at least 24 bytes and each key/value 13: counts past that are lies.
  if (!c.ok() || magic != 0x46554747 || (version != 2 && version != 3) || n_tensors > size / 24 || n_kv > size / 13) return false;
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < n_kv; i++) {
    const std::string key = c.String();
    const uint32_t type = c.Read<uint32_t>();
    if (key == "general.alignment" && type == kU32) {
      alignment = c.Read<uint32_t>();
      if (alignment == 0 || (alignment & (alignment - 1)) != 0) return false;
    } else if (!SkipValue(c, type, 0)) {
      return false;
    }
  }
  std::vector<GgufTensorSpan> spans;
  spans.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; i++) {
    GgufTensorSpan t;
    t.name = c.String();
    const uint32_t dims = c.Read<uint32_t>();
    if (dims > 8) return false;
    c.Skip(uint64_t(dims) * 8);
    t.type = c.Read<uint32_t>();
    t.begin = c.Read<uint64_t>();
    if (!c.ok()) return false;
    spans.push_back(std::move(t));
  }
  const uint64_t data_start = (c.at() + alignment - 1) / alignment * alignment;
  if (data_start > size) return false;
  for (auto& t : spans) {
    if (t.begin > size - data_start) return false;
    t.begin += data_start;
  }
  std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
  for (size_t i = 0; i < spans.size(); i++) spans[i].end = i + 1 < spans.size() ? spans[i + 1].begin : size;
  *out = std::move(spans);
  return true;
}

}  // namespace weightmap
