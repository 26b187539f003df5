#pragma once
// Waiting for one request's events in the CLI. Silence alone is not a hang: a long prefill used to
// send nothing until its first token, and the old rule (no event for --timeout ms cancels the wait)
// reported such work as "no event of request ... for 30000 ms", which read like a hung daemon
// (issue 37). A daemon now sends `progress` events while it reads a long prompt, and every event
// restarts the silence timer. After --timeout ms without one the daemon is asked for its stats: an
// answer means it is alive and the wait goes on; no answer either is the error, and it says both.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "vkstream/client.h"

namespace vks::cli {

class RequestEventWait {
 public:
  RequestEventWait(vkstream::Client& client, std::string id, std::chrono::milliseconds silence);
  // The request's next event, or nullopt after `poll` without one (callers poll to notice Ctrl-C).
  // Throws vkstream::ClientError(kTimeout) when the daemon answers neither an event nor stats.
  std::optional<vkstream::Event> next(std::chrono::milliseconds poll);
  // Stats requests sent because the request was silent (each answered).
  int liveness_checks() const { return liveness_checks_; }

 private:
  vkstream::Client& client_;
  std::string id_;
  std::chrono::milliseconds silence_;
  std::chrono::steady_clock::time_point last_heard_;
  int liveness_checks_ = 0;
};

// "[prompt 96/400 tokens read, 64 from the cache]" for a progress event (--verbose).
std::string describe_progress(const vkstream::Event& ev);

}  // namespace vks::cli
