#pragma once
// Wire protocol version. Bumped only for incompatible changes; additive fields keep the version
// (unknown fields are ignored by both sides). See docs/PROTOCOL.md, "Versioning".
#include <cstdint>

namespace vks::proto {

inline constexpr int32_t PROTOCOL_VERSION = 1;
inline constexpr int32_t kProtocolVersion = PROTOCOL_VERSION;
// Oldest client version this library's server side still accepts in `hello`.
inline constexpr int32_t kMinProtocolVersion = 1;

}  // namespace vks::proto
