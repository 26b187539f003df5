#include "server/stream_registry.h"

#include <algorithm>

namespace vks::server {

std::string owner_key(const ClientRef& client) {
  // push_back/append only: GCC 12 raises a false -Wrestrict on string assignment/concatenation here.
  std::string key;
  key.reserve(1 + std::max<size_t>(20, client.zmq_identity.size()));
  switch (client.transport) {
    case Transport::kUds:
      key.push_back('u');
      key.append(std::to_string(client.conn_id));
      break;
    case Transport::kZmq:
      key.push_back('z');
      key.append(client.zmq_identity);
      break;
    case Transport::kHttp:
      key.push_back('h');
      key.append(std::to_string(client.conn_id));
      break;
    case Transport::kNone:
      key.push_back('-');
      break;
  }
  return key;
}

StreamEntry& StreamRegistry::add(StreamEntry entry) {
  const std::string id = entry.id;
  id_by_topic_[entry.topic] = id;
  ++live_by_owner_[owner_key(entry.owner)];
  ++live_;
  return entries_.emplace(id, std::move(entry)).first->second;
}

StreamEntry* StreamRegistry::find(const std::string& id) {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second;
}

StreamEntry* StreamRegistry::find_by_topic(const std::string& topic) {
  auto it = id_by_topic_.find(topic);
  return it == id_by_topic_.end() ? nullptr : find(it->second);
}

void StreamRegistry::append(StreamEntry& e, std::string encoded) {
  e.bytes += encoded.size();
  e.events.push_back(std::move(encoded));
}

void StreamRegistry::mark_finished(StreamEntry& e, std::chrono::steady_clock::time_point now) {
  if (e.state == proto::RequestState::kFinished) return;
  e.state = proto::RequestState::kFinished;
  e.finished_at = now;
  --live_;
  auto it = live_by_owner_.find(owner_key(e.owner));
  if (it != live_by_owner_.end() && --it->second <= 0) live_by_owner_.erase(it);
  finished_order_.push_back(e.id);
  retained_bytes_ += e.bytes;
}

void StreamRegistry::evict(std::chrono::steady_clock::time_point now) {
  while (!finished_order_.empty()) {
    const std::string& oldest = finished_order_.front();
    const StreamEntry* e = find(oldest);
    const bool expired = e == nullptr || now - e->finished_at >= retention_ ||
                         retained_bytes_ > retention_max_bytes_;
    if (!expired) break;
    if (e != nullptr) retained_bytes_ -= e->bytes;
    erase(oldest);
    finished_order_.pop_front();
  }
}

void StreamRegistry::erase(const std::string& id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  id_by_topic_.erase(it->second.topic);
  entries_.erase(it);
}

std::vector<std::string> StreamRegistry::live_owned_by(const std::string& owner) const {
  std::vector<std::string> ids;
  if (live_count_of(owner) == 0) return ids;
  for (const auto& [id, e] : entries_) {
    if (e.state != proto::RequestState::kFinished && owner_key(e.owner) == owner) {
      ids.push_back(id);
    }
  }
  return ids;
}

std::vector<std::string> StreamRegistry::live_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, e] : entries_) {
    if (e.state != proto::RequestState::kFinished) ids.push_back(id);
  }
  return ids;
}

int32_t StreamRegistry::live_count_of(const std::string& owner) const {
  auto it = live_by_owner_.find(owner);
  return it == live_by_owner_.end() ? 0 : it->second;
}

}  // namespace vks::server
