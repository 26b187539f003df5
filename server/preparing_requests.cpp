#include "server/preparing_requests.h"

namespace vks::server {

bool PreparingRequests::add(const std::string& id, StopFlag stop) {
  return entries_.emplace(id, Entry{std::move(stop), false}).second;
}

bool PreparingRequests::cancel(const std::string& id) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  it->second.cancelled = true;
  if (it->second.stop) it->second.stop->store(true);
  return true;
}

bool PreparingRequests::finish(const std::string& id) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  const bool cancelled = it->second.cancelled;
  entries_.erase(it);
  return cancelled;
}

}  // namespace vks::server
