#include "mmap/prefault_claims.h"

#include <algorithm>

#include "mmap/mapping.h"

namespace weightmap {

PrefaultClaims::PrefaultClaims(uint64_t size)
    : units_(new std::atomic<uint8_t>[size / kUnit + 1]()), count_(size / kUnit + 1), size_(size) {}

uint64_t PrefaultClaims::Prefault(const uint8_t* base, uint64_t offset, uint64_t length, bool fault_in) {
  if (length == 0) return 0;
  const uint64_t end = offset + length;
  const uint64_t last = std::min((end - 1) / kUnit, count_ - 1);
  uint64_t done = 0;
  uint64_t run = UINT64_MAX;  // first unit of the run claimed so far
  auto flush = [&](uint64_t stop) {  // the run's units [run, stop)
    if (run == UINT64_MAX) return;
    // Whole units: a range that shares its first or last unit with another then leaves no page of
    // the other's unmapped when that one finds the unit claimed.
    const uint64_t from = run * kUnit, to = std::min(size_, stop * kUnit);
    weightmap::Prefault(base + from, to - from, fault_in);
    done += to - from;
    run = UINT64_MAX;
  };
  for (uint64_t u = offset / kUnit; u <= last; u++) {
    if (units_[u].exchange(1, std::memory_order_relaxed) == 0) {
      if (run == UINT64_MAX) run = u;
    } else {
      flush(u);
    }
  }
  flush(last + 1);
  return done;
}

void PrefaultClaims::Release(uint64_t offset, uint64_t length) {
  if (length == 0) return;
  const uint64_t last = std::min((offset + length - 1) / kUnit, count_ - 1);
  for (uint64_t u = offset / kUnit; u <= last; u++) units_[u].store(0, std::memory_order_relaxed);
}

}  // namespace weightmap
