// JS class MappedFile: a read-only mapping exposed as zero-copy external ArrayBuffers: the head
// (the whole file up to kMaxWindow bytes) and windows anywhere in it, since one ArrayBuffer holds
// at most kMaxWindow bytes (Node 20's limit: 4 GiB) and a model file may be larger.
#pragma once

#include <napi.h>

#include <memory>

#include "mmap/mapping.h"

namespace weightmap {

class MappedFile : public Napi::ObjectWrap<MappedFile> {
 public:
  static constexpr uint64_t kMaxWindow = uint64_t{1} << 32;
  static void Init(Napi::Env env, Napi::Object exports);
  // The mapping behind a JS MappedFile, for native objects that keep pointers into it.
  // Throws a TypeError if `value` is not an open MappedFile.
  static std::shared_ptr<Mapping> FromValue(Napi::Value value);

  explicit MappedFile(const Napi::CallbackInfo& info);

 private:
  Napi::Value Buffer(const Napi::CallbackInfo& info);
  Napi::Value Window(const Napi::CallbackInfo& info);
  Napi::Value ByteLength(const Napi::CallbackInfo& info);
  Napi::Value Path(const Napi::CallbackInfo& info);
  Napi::Value Closed(const Napi::CallbackInfo& info);
  Napi::Value Advise(const Napi::CallbackInfo& info);
  Napi::Value ResidentBytes(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  std::shared_ptr<Mapping> mapping_;
  Napi::Reference<Napi::ArrayBuffer> buffer_;
};

}  // namespace weightmap
