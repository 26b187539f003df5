#pragma once
// Limits the parser enforces. The server fills them from its configuration and reports them in the
// `hello` answer; clients read them from there.
#include <cstdint>

namespace vks::proto {

struct ProtocolLimits {
  uint32_t max_frame_bytes = 1u << 20;      // payload bytes of one frame / ZeroMQ message
  int32_t max_prompt_tokens = 0;            // prompt_ids length; 0 = no parser check (engine checks)
  int32_t max_tokens = 0;                   // upper bound for generate.max_tokens; 0 = 1<<20
  int32_t max_requests_per_connection = 64; // concurrent non-finished requests per connection
  uint64_t max_output_bytes = 8u << 20;     // queued output per connection before slow_consumer close
  int32_t max_queued = 256;                 // engine waiting queue
  int32_t max_stop_strings = 16;
  int32_t max_stop_string_bytes = 256;
  int32_t max_stop_token_ids = 64;
  int32_t max_logit_bias = 1024;
  int32_t max_logprobs = 20;
  int32_t max_detokenize_ids = 65536;       // ids in one detokenize request
  int32_t max_tag_bytes = 256;              // string tags
  int64_t max_deadline_ms = 86'400'000;     // 24 h
};

}  // namespace vks::proto
