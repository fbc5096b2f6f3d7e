// The failures every engine throws, as plain C++: a stable code and a message. native/napi turns
// them into JS errors carrying that code (lib/engines/native-errors.ts types them).
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>

namespace weightmap {

// A failure with a code the promise rejects with: "ABORT_ERR", "ERR_OUT_OF_RANGE", ...
class EngineError : public std::runtime_error {
 public:
  EngineError(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// Weights or a config the engine cannot run, with one of WeightFormatError's stable codes
// (lib/errors.ts): "OUT_OF_BOUNDS", "SHAPE_MISMATCH", "BAD_DTYPE", "MISSING_TENSOR", "CONFIG_MISMATCH",
// "UNSUPPORTED".
class SpecError : public EngineError {
 public:
  using EngineError::EngineError;
};

// The one abort idiom of the engines: a running call checks its flag between layers and throws
// EngineError ABORT_ERR, leaving its session at the position it had.
inline void ThrowIfAborted(const std::atomic<bool>& abort) {
  if (abort.load(std::memory_order_relaxed)) throw EngineError("ABORT_ERR", "The operation was aborted");
}

}  // namespace weightmap
