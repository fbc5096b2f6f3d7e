// Per-environment state of the addon (one per Node.js environment: main thread and each worker).
#pragma once

#include <napi.h>

#include <map>
#include <string>

namespace weightmap {

struct AddonData {
  Napi::FunctionReference mapped_file_ctor;
  // Constructors of the engine classes, by class name; each N-API file sets its own at registration.
  std::map<std::string, Napi::FunctionReference> classes;

  static AddonData* Get(Napi::Env env) { return env.GetInstanceData<AddonData>(); }
};

}  // namespace weightmap
