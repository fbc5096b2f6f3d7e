// A read-only memory mapping of one file. Shared by the JS MappedFile object and by every engine
// that holds raw pointers into it: the pages are unmapped when the last holder lets go, so a
// disposed JS handle can never pull the memory out from under a running kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "mmap/prefault_claims.h"

namespace weightmap {

// Thrown for I/O failures; `code` is the POSIX-style name ("ENOENT", "EACCES", ...).
class SystemError : public std::runtime_error {
 public:
  SystemError(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// PageOut (MADV_PAGEOUT, Linux 5.4+): reclaims the range's pages that no other process maps, clean
// file pages included: drops a file's page cache without touching pages someone else is using.
enum class Advice { Normal, Sequential, Random, WillNeed, DontNeed, PageOut };

// Readies bytes [p, p + length) of a mapping for a compute pass that reads them all: when every
// page is in the page cache already (a warm file), maps them into this process's page tables now
// (a read per 64 KB fault-around window, on the loading thread), so that the first token does not
// take ~10k page faults (633 MB at 64 KB per fault) on its own critical path; otherwise only starts the
// read-ahead (MADV_WILLNEED), which does not wait for the disk. With `fault_in`, pages not cached
// are read by faulting them in too, waiting for the disk: read-ahead fills the page cache in small
// folios whatever the range's advice, while a fault in a MADV_HUGEPAGE range reads 2 MB folios. A
// hint: failures change nothing.
void Prefault(const uint8_t* p, uint64_t length, bool fault_in = false);

class Mapping {
 public:
  static std::shared_ptr<Mapping> Open(const std::string& path);
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // True when [offset, offset+length) lies inside the mapping (overflow-safe).
  bool Contains(uint64_t offset, uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }
  // Pointer to `length` bytes at `offset`, or throws std::out_of_range. Every native read of a
  // tensor goes through here (or through Contains) first.
  const uint8_t* At(uint64_t offset, uint64_t length) const;

  void Advise(uint64_t offset, uint64_t length, Advice advice) const;
  // Bytes of the range currently resident in RAM (mincore); -1 where the OS cannot tell.
  int64_t ResidentBytes(uint64_t offset, uint64_t length) const;
  // Prefault over the part of [offset, offset+length) that no earlier call here set out to
  // prefault (prefault_claims.h); returns the bytes this call prefaulted.
  uint64_t PrefaultOnce(uint64_t offset, uint64_t length, bool fault_in) const;

 private:
  Mapping() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<PrefaultClaims> claims_;
#ifdef _WIN32
  void* file_ = nullptr;
  void* section_ = nullptr;
#endif
};

}  // namespace weightmap
