#pragma once
// Submit-time checks: every parameter of a GenerateRequest, the prompt ids, and whether the request
// can ever fit the context and the KV cache. Each failure names the field or the limit.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/sched/engine.h"

namespace vks::sched {

struct SubmitLimits {
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  int32_t max_prompt_tokens = 0;   // already resolved (never 0)
  int32_t max_new_tokens = 0;      // already resolved (never 0)
  int32_t kv_blocks = 0;           // blocks the engine may use
  int32_t block_size = 0;
};

struct Rejection {
  ErrorCode code = ErrorCode::kInvalidArgument;
  std::string message;
};

inline constexpr int32_t kMaxLogprobs = 20;
inline constexpr int32_t kMinPriority = -1000;
inline constexpr int32_t kMaxPriority = 1000;
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopStringBytes = 256;
inline constexpr size_t kMaxStopTokenIds = 64;
inline constexpr size_t kMaxLogitBias = 1024;
inline constexpr size_t kMaxIdLength = 64;

// Client-chosen request ids: 1..64 chars of [A-Za-z0-9._-].
bool valid_request_id(std::string_view id);
bool valid_utf8(std::string_view s);

// Everything but the prompt tokens.
std::optional<Rejection> check_params(const GenerateRequest& r, const SubmitLimits& lim);
// Prompt ids: non-empty, every id known; `field` names them in the message ("prompt_ids").
std::optional<Rejection> check_prompt(std::span<const int32_t> ids, const SubmitLimits& lim, std::string_view field);
// prompt + max_tokens against the context length and the whole KV cache.
// max_tokens 0 (not set) fits whenever the prompt leaves room for one token; an explicit one is
// rejected saying by how much it is too large.
std::optional<Rejection> check_fits(int32_t prompt_tokens, int32_t max_tokens, const SubmitLimits& lim);
// The tokens an unset max_tokens allows: the rest of the context and KV cache, within max_new_tokens.
int32_t room_to_generate(int32_t prompt_tokens, const SubmitLimits& lim);

}  // namespace vks::sched
