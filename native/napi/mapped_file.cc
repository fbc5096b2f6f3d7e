#include "napi/mapped_file.h"

#include <algorithm>
#include <string>

#include "napi/addon_data.h"
#include "napi/errors.h"
#include "napi/register.h"

namespace weightmap {

namespace {

Advice ParseAdvice(Napi::Env env, const std::string& name) {
  if (name == "normal") return Advice::Normal;
  if (name == "sequential") return Advice::Sequential;
  if (name == "random") return Advice::Random;
  if (name == "willneed") return Advice::WillNeed;
  if (name == "dontneed") return Advice::DontNeed;
  if (name == "pageout") return Advice::PageOut;
  ThrowTypeError(env, "advice must be one of normal, sequential, random, willneed, dontneed, pageout");
  return Advice::Normal;
}

uint64_t ToOffset(Napi::Env env, const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) ThrowTypeError(env, std::string(what) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > 9007199254740991.0 || d != static_cast<double>(static_cast<uint64_t>(d)))
    ThrowTypeError(env, std::string(what) + " must be a non-negative integer");
  return static_cast<uint64_t>(d);
}

}  // namespace

void MappedFile::Init(Napi::Env env, Napi::Object exports) {
  Napi::Function ctor = DefineClass(env, "MappedFile",
      {InstanceMethod<&MappedFile::Buffer>("buffer"),
       InstanceMethod<&MappedFile::Window>("window"),
       InstanceAccessor<&MappedFile::ByteLength>("byteLength"),
       InstanceAccessor<&MappedFile::Path>("path"),
       InstanceAccessor<&MappedFile::Closed>("closed"),
       InstanceMethod<&MappedFile::Advise>("advise"),
       InstanceMethod<&MappedFile::ResidentBytes>("residentBytes"),
       InstanceMethod<&MappedFile::Close>("close")});
  AddonData::Get(env)->mapped_file_ctor = Napi::Persistent(ctor);
  exports.Set("MappedFile", ctor);
}

MappedFile::MappedFile(const Napi::CallbackInfo& info) : Napi::ObjectWrap<MappedFile>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) ThrowTypeError(env, "MappedFile(path): path must be a string");
  std::string path = info[0].As<Napi::String>().Utf8Value();
  try {
    mapping_ = Mapping::Open(path);
  } catch (const SystemError& e) {
    throw MakeError(env, e.code(), e.what());
  }
}

std::shared_ptr<Mapping> MappedFile::FromValue(Napi::Value value) {
  Napi::Env env = value.Env();
  AddonData* data = AddonData::Get(env);
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(data->mapped_file_ctor.Value()))
    ThrowTypeError(env, "expected a MappedFile");
  MappedFile* self = MappedFile::Unwrap(value.As<Napi::Object>());
  if (!self->mapping_) throw MakeError(env, "ERR_WEIGHTMAP_CLOSED", "the MappedFile was closed");
  return self->mapping_;
}

namespace {

// An external ArrayBuffer over [offset, offset + length) of the mapping, which it keeps mapped:
// the pages stay while any JS view can still reach them, even after close().
Napi::ArrayBuffer WindowBuffer(Napi::Env env, const std::shared_ptr<Mapping>& mapping, uint64_t offset, uint64_t length) {
  auto* keep = new std::shared_ptr<Mapping>(mapping);
  return Napi::ArrayBuffer::New(
      env, const_cast<uint8_t*>(mapping->data()) + offset, length,
      [](Napi::Env, void*, std::shared_ptr<Mapping>* hold) { delete hold; }, keep);
}

}  // namespace

Napi::Value MappedFile::Buffer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!mapping_) throw MakeError(env, "ERR_WEIGHTMAP_CLOSED", "the MappedFile was closed");
  if (!buffer_.IsEmpty()) return buffer_.Value();
  // The head, detached by close() (views of it then read nothing).
  Napi::ArrayBuffer ab = WindowBuffer(env, mapping_, 0, std::min<uint64_t>(mapping_->size(), kMaxWindow));
  buffer_ = Napi::Persistent(ab);
  return ab;
}

Napi::Value MappedFile::Window(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!mapping_) throw MakeError(env, "ERR_WEIGHTMAP_CLOSED", "the MappedFile was closed");
  uint64_t offset = ToOffset(env, info[0], "offset");
  uint64_t length = ToOffset(env, info[1], "length");
  if (length > kMaxWindow) throw MakeError(env, "ERR_OUT_OF_RANGE", "a window holds at most 4 GiB");
  if (!mapping_->Contains(offset, length)) throw MakeError(env, "ERR_OUT_OF_RANGE", "window range is outside the mapping");
  return WindowBuffer(env, mapping_, offset, length);
}

Napi::Value MappedFile::ByteLength(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), mapping_ ? static_cast<double>(mapping_->size()) : 0);
}

Napi::Value MappedFile::Path(const Napi::CallbackInfo& info) {
  return mapping_ ? Napi::String::New(info.Env(), mapping_->path()) : info.Env().Null();
}

Napi::Value MappedFile::Closed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), !mapping_);
}

Napi::Value MappedFile::Advise(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!mapping_) throw MakeError(env, "ERR_WEIGHTMAP_CLOSED", "the MappedFile was closed");
  uint64_t offset = ToOffset(env, info[0], "offset");
  uint64_t length = ToOffset(env, info[1], "length");
  if (!info[2].IsString()) ThrowTypeError(env, "advice must be a string");
  if (!mapping_->Contains(offset, length))
    throw MakeError(env, "ERR_OUT_OF_RANGE", "advise range is outside the mapping");
  mapping_->Advise(offset, length, ParseAdvice(env, info[2].As<Napi::String>().Utf8Value()));
  return env.Undefined();
}

Napi::Value MappedFile::ResidentBytes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!mapping_) throw MakeError(env, "ERR_WEIGHTMAP_CLOSED", "the MappedFile was closed");
  uint64_t offset = info.Length() > 0 ? ToOffset(env, info[0], "offset") : 0;
  uint64_t length = info.Length() > 1 ? ToOffset(env, info[1], "length") : mapping_->size() - offset;
  return Napi::Number::New(env, static_cast<double>(mapping_->ResidentBytes(offset, length)));
}

Napi::Value MappedFile::Close(const Napi::CallbackInfo& info) {
  if (!buffer_.IsEmpty()) {
    Napi::ArrayBuffer ab = buffer_.Value();
    // Views over a detached buffer have length 0: later JS reads see nothing instead of
    // unmapped memory. Native holders keep the mapping alive through their own references.
    if (!ab.IsDetached()) ab.Detach();
    buffer_.Reset();
  }
  mapping_.reset();
  return info.Env().Undefined();
}

WEIGHTMAP_REGISTER(MappedFile, MappedFile::Init);

}  // namespace weightmap
