// Per-environment state of the addon (one per Node.js environment: main thread and each worker).
#pragma once

#include <napi.h>

namespace weightmap {

struct AddonData {
  Napi::FunctionReference mapped_file_ctor;

  static AddonData* Get(Napi::Env env) { return env.GetInstanceData<AddonData>(); }
};

}  // namespace weightmap
