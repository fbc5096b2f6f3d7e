// Module entry. Every N-API file registers its own part of the surface declared in binding.d.ts
// (see napi/register.h); this file only creates the per-environment state and runs them.
#include <napi.h>

#include "napi/addon_data.h"
#include "napi/register.h"

namespace weightmap {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData(new AddonData());
  RegisterAll(env, exports);
  return exports;
}

}  // namespace weightmap

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return weightmap::Init(env, exports); }

NODE_API_MODULE(weightmap, InitModule)
