#include "clients/cli/event_wait.h"

#include <utility>

namespace vks::cli {

RequestEventWait::RequestEventWait(vkstream::Client& client, std::string id, std::chrono::milliseconds silence)
    : client_(client), id_(std::move(id)), silence_(silence), last_heard_(std::chrono::steady_clock::now()) {}

std::optional<vkstream::Event> RequestEventWait::next(std::chrono::milliseconds poll) {
  std::optional<vkstream::Event> ev = client_.next_event(id_, poll);
  const auto now = std::chrono::steady_clock::now();
  if (ev) {
    last_heard_ = now;
    return ev;
  }
  if (now - last_heard_ <= silence_) return std::nullopt;
  try {
    (void)client_.stats();  // the daemon's loop answers even while its engine works on this request
  } catch (const vkstream::ClientError& e) {
    throw vkstream::ClientError(vkstream::ErrorKind::kTimeout,
                                "the daemon sent nothing for " + std::to_string(silence_.count()) + " ms: no token nor " +
                                    "prompt progress of request " + id_ + ", and no answer to a stats request (" +
                                    e.what() + "); it is hung or overloaded (a longer --timeout waits more)");
  }
  ++liveness_checks_;
  last_heard_ = std::chrono::steady_clock::now();
  return std::nullopt;
}

std::string describe_progress(const vkstream::Event& ev) {
  std::string s = "[prompt " + std::to_string(ev.prompt_tokens_done) + "/" + std::to_string(ev.usage.prompt_tokens) +
                  " tokens read";
  if (ev.usage.cached_tokens > 0) s += ", " + std::to_string(ev.usage.cached_tokens) + " from the cache";
  return s + "]";
}

}  // namespace vks::cli
