#pragma once
// Events from the engine thread to whoever drains them (the server's loop thread). The notifier is
// called after events were pushed, outside the lock; uv_async_send coalesces, so poll() drains all.
#include <functional>
#include <mutex>
#include <vector>

#include "engine/sched/engine.h"

namespace vks::sched {

class EventQueue {
 public:
  void set_notifier(std::function<void()> notify) {
    std::lock_guard lock(mu_);
    notify_ = std::move(notify);
  }
  // Engine thread: buffers without locking; publish() makes them visible and notifies.
  void add(EngineEvent e) { pending_.push_back(std::move(e)); }
  void publish() {
    if (pending_.empty()) return;
    std::function<void()> notify;
    {
      std::lock_guard lock(mu_);
      for (EngineEvent& e : pending_) ready_.push_back(std::move(e));
      notify = notify_;
    }
    pending_.clear();
    if (notify) {
      try {
        notify();
      } catch (...) {  // a throwing notifier must not take the engine thread down
      }
    }
  }
  size_t poll(std::vector<EngineEvent>& out) {
    std::lock_guard lock(mu_);
    const size_t n = ready_.size();
    for (EngineEvent& e : ready_) out.push_back(std::move(e));
    ready_.clear();
    return n;
  }

 private:
  std::mutex mu_;
  std::function<void()> notify_;
  std::vector<EngineEvent> ready_;    // guarded by mu_
  std::vector<EngineEvent> pending_;  // engine thread only
};

}  // namespace vks::sched
