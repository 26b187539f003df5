#pragma once
// Generations with a chosen id whose preparation (a chat's render, a long prompt's tokenizing, a
// grammar's compile) is still running off the loop: not in the stream registry yet, but a `cancel`
// by that id must reach them. A cancel sets the preparation's stop flag (its render stops at once)
// and is remembered, so that the request ends `cancelled` instead of being admitted. Their ids
// count as taken. Loop thread only (the flags are read by pool threads).
#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>

namespace vks::server {

class PreparingRequests {
 public:
  using StopFlag = std::shared_ptr<std::atomic<bool>>;

  // `id` starts its preparation; `stop` is the flag its work reads. False when `id` is already
  // preparing (the caller refuses the request).
  bool add(const std::string& id, StopFlag stop);
  bool contains(const std::string& id) const { return entries_.count(id) != 0; }
  // A cancel by id: true when `id` is preparing (its flag is set; finish() will say so).
  bool cancel(const std::string& id);
  // The preparation of `id` ended: forgets it and tells whether it was cancelled meanwhile.
  bool finish(const std::string& id);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    StopFlag stop;
    bool cancelled = false;
  };
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace vks::server
