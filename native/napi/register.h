// Each N-API file registers its part of the module with WEIGHTMAP_REGISTER(name, fn), so adding
// a class or function touches only its own file. addon.cc runs every registered fn at load.
#pragma once

#include <napi.h>

namespace weightmap {

using RegisterFn = void (*)(Napi::Env env, Napi::Object exports);

struct Registrar {
  Registrar(const char* name, RegisterFn fn);
};

void RegisterAll(Napi::Env env, Napi::Object exports);

}  // namespace weightmap

#define WEIGHTMAP_REGISTER(name, fn) static ::weightmap::Registrar weightmap_registrar_##name(#name, fn)
