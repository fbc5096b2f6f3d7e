// Which parts of a mapping some thread has set out to prefault (mapping.h Prefault), so that two
// prefaults of the same weights, the one loadModel starts while the header is parsed
// (early_prefault.h) and the engine's at load, running at once, split the work instead of both
// faulting the same windows (mapping 640 MB of small page-cache folios costs ~20-35 ms of CPU).
// Claims are per 64 KB (the kernel's fault-around unit).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace weightmap {

class PrefaultClaims {
 public:
  explicit PrefaultClaims(uint64_t size);

  // Prefaults the 64 KB units over [offset, offset + length) of the mapping at `base` that no
  // earlier call claimed (whole units: up to 64 KB beyond the range at each end); returns the bytes
  // it prefaulted itself.
  uint64_t Prefault(const uint8_t* base, uint64_t offset, uint64_t length, bool fault_in);
  // Forgets the claims over a range whose pages were dropped (MADV_DONTNEED, MADV_PAGEOUT).
  void Release(uint64_t offset, uint64_t length);

  static constexpr uint64_t kUnit = uint64_t(64) << 10;

 private:
  std::unique_ptr<std::atomic<uint8_t>[]> units_;
  uint64_t count_;
  uint64_t size_;
};

}  // namespace weightmap
