#include "protocol/errors.h"

#include <array>


namespace vks::proto {
namespace {

constexpr std::array<std::string_view, kWireErrorCount> kNames = {
    "bad_frame",        "frame_too_large",   "invalid_request", "unknown_type",
    "missing_field",    "invalid_field",     "unsupported_version", "not_found",
    "already_exists",   "overloaded",        "too_many_requests", "prompt_too_long",
    "capacity_exceeded", "cancelled",        "deadline_exceeded", "unsupported",
    "unauthorized",     "shutting_down",     "slow_consumer",   "device_error",
    "model_load_failed", "internal",  "pull_failed",
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

}  // namespace vks::proto
