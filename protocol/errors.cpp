#include "protocol/errors.h"

#include <array>

#include "engine/sched/engine.h"

namespace vks::proto {
namespace {

constexpr std::array<std::string_view, kWireErrorCount> kNames = {
    "bad_frame",        "frame_too_large",   "invalid_request", "unknown_type",
    "missing_field",    "invalid_field",     "unsupported_version", "not_found",
    "already_exists",   "overloaded",        "too_many_requests", "prompt_too_long",
    "capacity_exceeded", "cancelled",        "deadline_exceeded", "unsupported",
    "unauthorized",     "shutting_down",     "slow_consumer",   "device_error",
    "internal",
};

}  // namespace

std::string_view wire_error_name(WireError code) {
  const auto i = static_cast<size_t>(code);
  return i < kNames.size() ? kNames[i] : std::string_view("internal");
}

std::optional<WireError> parse_wire_error(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<WireError>(i);
  }
  return std::nullopt;
}

WireError wire_error_from_engine(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return WireError::kInvalidField;
    case ErrorCode::kNotFound: return WireError::kNotFound;
    case ErrorCode::kUnsupported: return WireError::kUnsupported;
    case ErrorCode::kOutOfMemory: return WireError::kCapacityExceeded;
    case ErrorCode::kOverloaded: return WireError::kOverloaded;
    case ErrorCode::kCancelled: return WireError::kCancelled;
    case ErrorCode::kDeadlineExceeded: return WireError::kDeadlineExceeded;
    case ErrorCode::kDevice: return WireError::kDeviceError;
    case ErrorCode::kCorrupt:
    case ErrorCode::kIo:
    case ErrorCode::kInternal: return WireError::kInternal;
  }
  return WireError::kInternal;
}

namespace {

// The engine starts field errors with the field name ("max_tokens: ..."); its name for the text
// prompt is prompt_text, the wire's is prompt.
std::string field_from_message(std::string_view message) {
  size_t n = 0;
  while (n < message.size() && n < 64) {
    const char c = message[n];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.')) break;
    ++n;
  }
  if (n == 0 || n >= message.size() || message[n] != ':') return {};
  const std::string field(message.substr(0, n));
  return field == "prompt_text" ? "prompt" : field;
}

}  // namespace

ProtocolError error_from_submit(const SubmitResult& result, int32_t max_prompt_tokens) {
  std::string field = field_from_message(result.message);
  if (result.code == ErrorCode::kInvalidArgument && max_prompt_tokens > 0 &&
      result.prompt_tokens > max_prompt_tokens) {
    return make_error(WireError::kPromptTooLong,
                      result.message.empty()
                          ? "prompt of " + std::to_string(result.prompt_tokens) + " tokens exceeds max_prompt_tokens " +
                                std::to_string(max_prompt_tokens)
                          : result.message,
                      field == "prompt_ids" ? field : "prompt");
  }
  std::string message = result.message.empty() ? "request rejected by the engine" : result.message;
  return make_error(wire_error_from_engine(result.code), std::move(message), std::move(field));
}

}  // namespace vks::proto
