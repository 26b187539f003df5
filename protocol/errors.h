#pragma once
// Wire error codes, the ProtocolError carried by every failed parse or request, and the Result
// type every protocol function returns instead of throwing.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace vks::proto {

// One enum for every error a client can see. Names (wire_error_name) are the wire strings and are
// listed in docs/PROTOCOL.md; never renumber or rename, only append.
enum class WireError : int32_t {
  kBadFrame,           // "bad_frame": payload is not one complete msgpack value (or has trailing bytes)
  kFrameTooLarge,      // "frame_too_large": length prefix above max_frame_bytes (connection closed)
  kInvalidRequest,     // "invalid_request": not a map, or no string "type"
  kUnknownType,        // "unknown_type": "type" names no request
  kMissingField,       // "missing_field": a required field is absent (field names it)
  kInvalidField,       // "invalid_field": wrong msgpack type or value out of range (field names it)
  kUnsupportedVersion, // "unsupported_version": hello with a version the server cannot speak
  kNotFound,           // "not_found": unknown, expired or foreign request id
  kAlreadyExists,      // "already_exists": client-chosen id already live or retained
  kOverloaded,         // "overloaded": server queue full; retry_after_ms says when to retry
  kTooManyRequests,    // "too_many_requests": per-connection concurrent request limit reached
  kPromptTooLong,      // "prompt_too_long": prompt tokens above max_prompt_tokens / context
  kCapacityExceeded,   // "capacity_exceeded": prompt + max_tokens can never fit the KV cache
  kCancelled,          // "cancelled": the request was cancelled
  kDeadlineExceeded,   // "deadline_exceeded": deadline_ms passed (queue + generation)
  kUnsupported,        // "unsupported": valid but not handled by this server/model
  kUnauthorized,       // "unauthorized": peer uid/gid not allowed
  kShuttingDown,       // "shutting_down": server is stopping and accepts no new requests
  kSlowConsumer,       // "slow_consumer": connection closed because its output bound was hit
  kDeviceError,        // "device_error": GPU / Vulkan failure while running the request
  kModelLoadFailed,    // "model_load_failed": the named model could not be loaded (corrupt, unsupported, too big)
  kInternal,           // "internal": a server bug
  kPullFailed,         // "pull_failed": a model could not be downloaded (network, HTTP error, size or sha256 mismatch)
};
inline constexpr int32_t kWireErrorCount = static_cast<int32_t>(WireError::kPullFailed) + 1;

std::string_view wire_error_name(WireError code);
// Inverse of wire_error_name; nullopt for a string that is not a known code (clients should treat
// an unknown code as a generic error: new codes may be added without a version bump).
std::optional<WireError> parse_wire_error(std::string_view name);
struct ProtocolError {
  WireError code = WireError::kInternal;
  std::string message;  // human-readable, names the problem
  std::string field;    // offending field (dotted path, e.g. "logit_bias.17"); empty if none
};

// Either a value or a ProtocolError. Nothing in vks_protocol throws across its API.
template <class T>
class Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}               // NOLINT
  Result(ProtocolError error) : v_(std::in_place_index<1>, std::move(error)) {}   // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const ProtocolError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ProtocolError> v_;
};

inline ProtocolError make_error(WireError code, std::string message, std::string field = {}) {
  return ProtocolError{code, std::move(message), std::move(field)};
}

}  // namespace vks::proto
