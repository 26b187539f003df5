#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace vks {

// Error categories shared by every layer. The protocol maps them to wire error codes.
enum class ErrorCode {
  kInvalidArgument,   // caller passed something malformed or absurd
  kNotFound,          // file, tensor, key or request id does not exist
  kCorrupt,           // input file is damaged (truncated, bad offsets, bad magic)
  kUnsupported,       // valid but not handled (architecture, tensor type, GGUF version)
  kOutOfMemory,       // host or device memory, or KV cache capacity
  kOverloaded,        // queue full; retry later
  kCancelled,
  kDeadlineExceeded,
  kIo,                // OS-level failure (open, mmap, read)
  kDevice,            // Vulkan failure
  kInternal,          // a bug: should never happen
};

std::string_view error_code_name(ErrorCode code);

// Thrown by load-time code (GGUF, model, tokenizer, device setup). Never let it cross a thread
// boundary or a libuv callback: catch it at the entry point and turn it into an event or exit code.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace vks
