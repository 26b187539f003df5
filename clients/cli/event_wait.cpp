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
                                "no event of request " + id_ + " for " + std::to_string(silence_.count()) +
                                    " ms, and the daemon did not answer a stats request either (" + e.what() +
                                    "): it is hung or overloaded");
  }
  ++liveness_checks_;
  last_heard_ = std::chrono::steady_clock::now();
  return std::nullopt;
}

}  // namespace vks::cli
