#include "napi/register.h"

#include <utility>
#include <vector>

namespace weightmap {

namespace {
std::vector<std::pair<const char*, RegisterFn>>& Registry() {
  static std::vector<std::pair<const char*, RegisterFn>> registry;
  return registry;
}
}  // namespace

Registrar::Registrar(const char* name, RegisterFn fn) { Registry().emplace_back(name, fn); }

void RegisterAll(Napi::Env env, Napi::Object exports) {
  for (auto& [name, fn] : Registry()) fn(env, exports);
}

}  // namespace weightmap
