#include "engine/sched/state_checkpoints.h"

#include <algorithm>

namespace vks::sched {

StateCheckpoints::StateCheckpoints(int32_t first_slot, int32_t slots)
    : first_(first_slot), slots_(static_cast<size_t>(std::max(slots, 0))) {}

int32_t StateCheckpoints::find(uint64_t hash) {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return -1;
  slots_[static_cast<size_t>(it->second)].used = ++clock_;
  return first_ + it->second;
}

int32_t StateCheckpoints::take(uint64_t hash) {
  if (slots_.empty()) return -1;
  if (auto it = by_hash_.find(hash); it != by_hash_.end()) {
    slots_[static_cast<size_t>(it->second)].used = ++clock_;
    return -1;
  }
  // Free slots have used == 0 (never used, or dropped), so the least recently used is taken first.
  auto lru = std::min_element(slots_.begin(), slots_.end(), [](const Slot& a, const Slot& b) {
    return a.held != b.held ? !a.held : a.used < b.used;
  });
  if (lru->held) by_hash_.erase(lru->hash);
  *lru = Slot{hash, true, ++clock_};
  const auto index = static_cast<int32_t>(lru - slots_.begin());
  by_hash_.emplace(hash, index);
  return first_ + index;
}

void StateCheckpoints::drop(uint64_t hash) {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return;
  slots_[static_cast<size_t>(it->second)] = Slot{};
  by_hash_.erase(it);
}

}  // namespace vks::sched
