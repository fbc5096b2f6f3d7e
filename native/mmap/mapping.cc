#include "mmap/mapping.h"
#include "mmap/huge_pages.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace weightmap {

namespace {

// A non-empty dummy the zero-length mapping points at, so data() is never null.
const uint8_t kEmpty[1] = {0};

#ifndef _WIN32
std::string ErrnoName(int err) {
  switch (err) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EISDIR: return "EISDIR";
    case ENOMEM: return "ENOMEM";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case EINVAL: return "EINVAL";
    case ENODEV: return "ENODEV";
    default: return "EIO";
  }
}

[[noreturn]] void ThrowErrno(const char* what, const std::string& path) {
  int err = errno;
  throw SystemError(ErrnoName(err), std::string(what) + " '" + path + "': " + std::strerror(err));
}

constexpr uintptr_t kFaultAroundBytes = 64 << 10;

long PageSize() {
  static const long page = sysconf(_SC_PAGESIZE);
  return page;
}
#endif

#if defined(__linux__)
// Maps the whole file read-only at a 2 MB-aligned address when it is 2 MB or more, so that a range
// advised MADV_HUGEPAGE (mmap/huge_pages.h) can be mapped by PMD: a PMD needs the address and the
// file offset equal modulo 2 MB. Linux 6.x already aligns large file mappings; elsewhere the file
// is mapped again over an aligned reservation.
void* MapAligned(int fd, size_t size) {
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED || size < kHugePageBytes || reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0) return p;
  const uintptr_t page = static_cast<uintptr_t>(PageSize());
  const size_t rounded = (size + page - 1) & ~(page - 1);
  void* reserved = MapAlignedAnonymous(rounded, PROT_NONE);
  if (!reserved) return p;  // unaligned still works, in small pages
  void* fixed = ::mmap(reserved, size, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  if (fixed == MAP_FAILED) {
    ::munmap(reserved, rounded);
    return p;
  }
  ::munmap(p, size);
  return fixed;
}
#elif !defined(_WIN32)
void* MapAligned(int fd, size_t size) { return ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0); }
#endif

}  // namespace

std::shared_ptr<Mapping> Mapping::Open(const std::string& path) {
  std::shared_ptr<Mapping> m(new Mapping());
  m->path_ = path;
#ifdef _WIN32
  int wlen = MultiByteToWideChar(CP_UTF8, 0, path.c_str(), -1, nullptr, 0);
  std::vector<wchar_t> wpath(wlen > 0 ? wlen : 1);
  MultiByteToWideChar(CP_UTF8, 0, path.c_str(), -1, wpath.data(), wlen);
  HANDLE file = CreateFileW(wpath.data(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr,
                            OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) {
    DWORD e = GetLastError();
    throw SystemError(e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND ? "ENOENT" : "EIO",
                      "cannot open '" + path + "' (Windows error " + std::to_string(e) + ")");
  }
  LARGE_INTEGER size;
  if (!GetFileSizeEx(file, &size)) {
    CloseHandle(file);
    throw SystemError("EIO", "cannot stat '" + path + "'");
  }
  m->file_ = file;
  m->size_ = static_cast<size_t>(size.QuadPart);
  if (m->size_ == 0) {
    m->data_ = kEmpty;
    return m;
  }
  HANDLE section = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
  if (!section) throw SystemError("EIO", "cannot map '" + path + "'");
  m->section_ = section;
  void* view = MapViewOfFile(section, FILE_MAP_READ, 0, 0, 0);
  if (!view) throw SystemError("ENOMEM", "cannot map a view of '" + path + "'");
  m->data_ = static_cast<const uint8_t*>(view);
#else
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ThrowErrno("cannot open", path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    ThrowErrno("cannot stat", path);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw SystemError("EISDIR", "cannot map '" + path + "': it is a directory");
  }
  m->size_ = static_cast<size_t>(st.st_size);
  if (m->size_ == 0) {
    ::close(fd);
    m->data_ = kEmpty;
    return m;
  }
  void* p = MapAligned(fd, m->size_);
  ::close(fd);  // the mapping keeps its own reference to the file
  if (p == MAP_FAILED) {
    m->size_ = 0;
    ThrowErrno("cannot map", path);
  }
  m->data_ = static_cast<const uint8_t*>(p);
#endif
  m->claims_ = std::make_unique<PrefaultClaims>(m->size_);
  return m;
}

uint64_t Mapping::PrefaultOnce(uint64_t offset, uint64_t length, bool fault_in) const {
  if (size_ == 0 || !Contains(offset, length) || !claims_) return 0;
  return claims_->Prefault(data_, offset, length, fault_in);
}

Mapping::~Mapping() {
#ifdef _WIN32
  if (data_ && data_ != kEmpty) UnmapViewOfFile(data_);
  if (section_) CloseHandle(static_cast<HANDLE>(section_));
  if (file_) CloseHandle(static_cast<HANDLE>(file_));
#else
  if (data_ && data_ != kEmpty) ::munmap(const_cast<uint8_t*>(data_), size_);
#endif
}

const uint8_t* Mapping::At(uint64_t offset, uint64_t length) const {
  if (!Contains(offset, length)) {
    throw std::out_of_range("read of " + std::to_string(length) + " bytes at offset " +
                            std::to_string(offset) + " is outside '" + path_ + "' (" +
                            std::to_string(size_) + " bytes)");
  }
  return data_ + offset;
}

void Mapping::Advise(uint64_t offset, uint64_t length, Advice advice) const {
  if (size_ == 0 || !Contains(offset, length) || length == 0) return;
#ifndef _WIN32
  const uint64_t page = static_cast<uint64_t>(PageSize());
  const uint64_t start = offset & ~(page - 1);
  const uint64_t end = offset + length;
  int flag = MADV_NORMAL;
  switch (advice) {
    case Advice::Normal: flag = MADV_NORMAL; break;
    case Advice::Sequential: flag = MADV_SEQUENTIAL; break;
    case Advice::Random: flag = MADV_RANDOM; break;
    case Advice::WillNeed: flag = MADV_WILLNEED; break;
    case Advice::DontNeed: flag = MADV_DONTNEED; break;
    case Advice::PageOut:
#ifdef MADV_PAGEOUT
      flag = MADV_PAGEOUT;
      break;
#else
      return;
#endif
  }
  if ((advice == Advice::DontNeed || advice == Advice::PageOut) && claims_) claims_->Release(offset, length);
  // Advice is a hint: a failure changes nothing about correctness.
  (void)::madvise(const_cast<uint8_t*>(data_) + start, end - start, flag);
#else
  if (advice == Advice::WillNeed) {
    WIN32_MEMORY_RANGE_ENTRY range{const_cast<uint8_t*>(data_) + offset, static_cast<SIZE_T>(length)};
    PrefetchVirtualMemory(GetCurrentProcess(), 1, &range, 0);
  }
#endif
}

void Prefault(const uint8_t* p, uint64_t length, bool fault_in) {
#ifndef _WIN32
  if (length == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(PageSize());
  const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(page - 1);  // inside the mapping: it starts on a page
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + length;
  void* range = reinterpret_cast<void*>(start);
  // mincore of a range not yet mapped looks each page up in the page cache (~15 ms for 640 MB):
  // only worth it where its answer changes what is done.
  if (!fault_in) {
    std::vector<unsigned char> resident((end - start + page - 1) / page);
    if (::mincore(range, end - start, resident.data()) != 0) return;
    for (unsigned char r : resident) {
      if ((r & 1) == 0) {
        (void)::madvise(range, end - start, MADV_WILLNEED);
        return;
      }
    }
  }
  // One read per fault-around window (the kernel's default 64 KB, aligned): each fault maps the
  // window's cached pages (a 2 MB folio under huge-page advice: the whole PMD). Half the CPU of
  // MADV_POPULATE_READ, which walks every 4 KB page again after faulting it in (640 MB of small
  // folios: ~21 ms against ~40).
  const uintptr_t window = std::max<uintptr_t>(kFaultAroundBytes, page);
  uint8_t sink = 0;
  for (uintptr_t at = start; at < end; at = (at & ~(window - 1)) + window) sink ^= *reinterpret_cast<const volatile uint8_t*>(at);
  (void)sink;
#else
  (void)p;
  (void)length;
#endif
}

int64_t Mapping::ResidentBytes(uint64_t offset, uint64_t length) const {
  if (size_ == 0 || length == 0) return 0;
  if (!Contains(offset, length)) return -1;
#ifdef _WIN32
  return -1;
#else
  const uint64_t page = static_cast<uint64_t>(PageSize());
  const uint64_t start = offset & ~(page - 1);
  const uint64_t end = offset + length;
  const size_t pages = static_cast<size_t>((end - start + page - 1) / page);
  std::vector<unsigned char> vec(pages);
  if (::mincore(const_cast<uint8_t*>(data_) + start, end - start, vec.data()) != 0) return -1;
  int64_t resident = 0;
  for (unsigned char v : vec) resident += (v & 1);
  return resident * static_cast<int64_t>(page);
#endif
}

}  // namespace weightmap
