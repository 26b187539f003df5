#pragma once
// Every request the daemon accepted, known by id: its owner (connection id or ZeroMQ peer, never a
// pointer), its PUB topic, and its event log (encoded events, index = seq) so late subscribers and
// `replay` get everything. Finished requests are retained for a window, bounded in total bytes.
// Loop thread only.
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/responses.h"
#include "server/client_ref.h"

namespace vks::server {

class ChatToolCalls;

struct StreamEntry {
  std::string id;
  std::string model;  // the served model's name
  double load_ms = 0;  // how long it waited for its model to load (in its finished event's timings)
  std::string topic;
  ClientRef owner;
  bool stream_to_owner = true;   // token/lifecycle events go to the owner's transport
  bool detached = false;         // survives the owner's disconnect
  bool with_logprobs = false;
  proto::RequestState state = proto::RequestState::kQueued;
  int32_t queue_position = -1;
  int32_t prompt_tokens = 0;
  int32_t generated_tokens = 0;
  std::optional<proto::FinishReason> reason;
  std::vector<std::string> events;  // encoded event maps; events[seq]
  uint64_t bytes = 0;
  std::chrono::steady_clock::time_point finished_at{};
  // A chat request with tools (msgpack or HTTP): splits its reply's calls out as tool_call events.
  std::shared_ptr<ChatToolCalls> tool_calls;
};

// "u<connection id>" for a Unix-socket client, "z<routing id>" for a ZeroMQ peer.
std::string owner_key(const ClientRef& client);

class StreamRegistry {
 public:
  StreamRegistry(std::chrono::milliseconds retention, uint64_t retention_max_bytes)
      : retention_(retention), retention_max_bytes_(retention_max_bytes) {}

  StreamEntry& add(StreamEntry entry);  // id must not exist
  StreamEntry* find(const std::string& id);
  StreamEntry* find_by_topic(const std::string& topic);
  bool contains(const std::string& id) const { return entries_.count(id) != 0; }

  // Appends one encoded event; returns its seq. Updates the counters used by status.
  int64_t next_seq(const StreamEntry& e) const { return static_cast<int64_t>(e.events.size()); }
  void append(StreamEntry& e, std::string encoded);
  // The request's finished event is in the log: start its retention period.
  void mark_finished(StreamEntry& e, std::chrono::steady_clock::time_point now);
  // Drops finished entries older than the retention window, then the oldest ones while the
  // retained bytes exceed the bound.
  void evict(std::chrono::steady_clock::time_point now);

  // Ids of live (not finished) requests of one owner (owner_key) / of every live request.
  std::vector<std::string> live_owned_by(const std::string& owner) const;
  std::vector<std::string> live_ids() const;
  int32_t live_count() const { return live_; }
  int32_t live_count_of(const std::string& owner) const;
  int32_t retained_count() const { return static_cast<int32_t>(finished_order_.size()); }
  uint64_t retained_bytes() const { return retained_bytes_; }
  std::chrono::milliseconds retention() const { return retention_; }

 private:
  void erase(const std::string& id);
  std::chrono::milliseconds retention_;
  uint64_t retention_max_bytes_;
  std::unordered_map<std::string, StreamEntry> entries_;
  std::unordered_map<std::string, std::string> id_by_topic_;
  std::unordered_map<std::string, int32_t> live_by_owner_;
  std::deque<std::string> finished_order_;  // oldest first
  uint64_t retained_bytes_ = 0;
  int32_t live_ = 0;
};

}  // namespace vks::server
