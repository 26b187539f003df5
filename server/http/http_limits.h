#pragma once
// Hard limits of the HTTP transport. Past each one the peer gets a JSON error (431, 413, 503) or,
// for output, is closed; never does one connection make the daemon's memory grow without bound.
#include <cstdint>

namespace vks::http {

struct HttpLimits {
  uint32_t max_header_bytes = 16 * 1024;       // request line + headers -> 431
  uint64_t max_body_bytes = 4u << 20;          // de-chunked body -> 413
  uint32_t max_connections = 1024;             // open connections -> 503 for the next one
  uint64_t max_output_bytes = 8u << 20;        // queued output before a slow reader is closed
  uint64_t max_stashed_bytes = 256 * 1024;     // pipelined bytes read ahead of the current answer
  uint32_t keep_alive_idle_ms = 120'000;       // idle keep-alive connection closed after this
  uint32_t request_timeout_ms = 30'000;        // a started request must be complete within this
};

}  // namespace vks::http
