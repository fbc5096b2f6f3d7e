#include "napi/output_buffers.h"

#include <mutex>
#include <utility>

namespace weightmap {

namespace {

// Bytes kept in all: the arrays come back in batches, when V8 collects them (a dozen tokens'
// logits at a time), so a few kept buffers run out between collections.
constexpr size_t kKeptBytes = size_t(16) << 20;

struct Kept {
  std::mutex mu;
  std::vector<std::vector<float>> buffers;
  size_t bytes = 0;
};

// Never destroyed: a Float32Array may be collected after static destructors have run.
Kept& kept() {
  static Kept* k = new Kept();
  return *k;
}

}  // namespace

std::vector<float> TakeOutputBuffer(size_t floats) {
  {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mu);
    for (size_t i = 0; i < k.buffers.size(); i++) {
      if (k.buffers[i].capacity() < floats) continue;
      std::vector<float> b = std::move(k.buffers[i]);
      k.buffers.erase(k.buffers.begin() + i);
      k.bytes -= b.capacity() * sizeof(float);
      b.resize(floats);  // within capacity: no allocation (a growth zero-fills only the new tail)
      return b;
    }
  }
  return std::vector<float>(floats);
}

void GiveOutputBuffer(std::vector<float>&& buffer) {
  const size_t bytes = buffer.capacity() * sizeof(float);
  if (bytes == 0) return;
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mu);
  if (k.bytes + bytes > kKeptBytes) return;  // the caller's vector frees it
  k.bytes += bytes;
  k.buffers.push_back(std::move(buffer));
}

}  // namespace weightmap
