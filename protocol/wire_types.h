#pragma once
// Plain value types that appear on the wire (token ids, finish reasons, usage, timings, logprobs).
// They mirror the engine's types field by field but do not depend on engine/: the server translates
// between the two in server/engine_translation.h, clients use these directly.
#include <cstdint>
#include <vector>

namespace vks::proto {

using TokenId = int32_t;

// Wire names: "stop", "length", "cancelled", "deadline", "error", "tool_calls"
// (finish_reason_wire_name). kToolCalls: a chat reply with tools that stopped after calling them.
enum class FinishReason { kStop, kLength, kCancelled, kDeadline, kError, kToolCalls };

struct TokenLogprob {
  TokenId id = 0;
  float logprob = 0;
};
struct GeneratedToken {
  TokenId id = 0;
  float logprob = 0;              // of the chosen token
  std::vector<TokenLogprob> top;  // top-N alternatives
};
struct Usage {
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;      // prompt tokens served from the prefix cache
  int32_t generated_tokens = 0;
};
struct Timings {
  double queue_ms = 0;
  double ttft_ms = 0;
  double total_ms = 0;
  int32_t draft_tokens = 0;     // speculative decoding: drafted and verified
  int32_t accepted_tokens = 0;  // of them, accepted
  double load_ms = 0;           // the request waited this long for its model to load (in ttft_ms and total_ms)
};

}  // namespace vks::proto
