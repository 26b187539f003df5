#pragma once
// Stream tokens, PUB topics and request-id validation.
// Each request gets a random 128-bit stream token at submit; its ZeroMQ PUB topic is
// "vks." + 32 lowercase hex chars (fixed width, 36 bytes, so one topic is never a prefix of another).
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace vks::proto {

inline constexpr std::string_view kTopicPrefix = "vks.";
inline constexpr size_t kTopicBytes = 4 + 32;
inline constexpr size_t kMaxClientIdBytes = 64;

using StreamToken = std::array<uint8_t, 16>;

// 128 random bits from the OS (std::random_device); the caller owns no state.
StreamToken random_stream_token();
// Same, from a caller-owned generator (tests, or a server-owned seeded engine).
StreamToken stream_token_from(std::mt19937_64& rng);

std::string to_hex(const StreamToken& token);      // 32 lowercase hex chars
std::string topic_for(const StreamToken& token);   // "vks." + to_hex(token)
bool is_valid_topic(std::string_view topic);       // exactly "vks." + 32 lowercase hex

// Server-assigned request ids: 32 lowercase hex chars (e.g. to_hex(random_stream_token())).
std::string new_request_id();
bool is_server_request_id(std::string_view id);
// Client-chosen ids: 1..64 chars of [A-Za-z0-9._-].
bool is_valid_client_id(std::string_view id);
// Any id a client may name in cancel/status/replay: a valid client id (server ids are a subset).
inline bool is_valid_request_id(std::string_view id) { return is_valid_client_id(id); }

}  // namespace vks::proto
