#pragma once
// Recurrent states kept at block boundaries, so that a cached prefix of a model with recurrent
// layers (Gated DeltaNet) can be reused: the attention layers' K/V of the prefix are in the prefix
// cache's blocks, the recurrent layers' state after it is here. A checkpoint is keyed by the
// chained hash of the prefix's last full block (equal hashes mean equal prefixes, block_manager.h)
// and lives in one of the runner's checkpoint slots; when all are taken the least recently used is
// overwritten. The scheduler decides where checkpoints are taken and resumed from; the engine makes
// the copies (StateCopy) with the runner, between steps.
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace vks::sched {

// One state copy between runner slots (live or checkpoint).
struct StateCopy {
  int32_t from = -1;
  int32_t to = -1;
};

class StateCheckpoints {
 public:
  // The runner's checkpoint slots are [first_slot, first_slot + slots).
  StateCheckpoints(int32_t first_slot, int32_t slots);

  bool enabled() const { return !slots_.empty(); }
  int32_t size() const { return static_cast<int32_t>(by_hash_.size()); }
  // The slot keeping the state after the prefix ending in the block of `hash` (marked used), or -1.
  int32_t find(uint64_t hash);
  // A slot to copy the state after `hash`'s prefix into: -1 when that state is kept already (equal
  // prefixes give equal states: nothing to copy), else the least recently used slot, now `hash`'s.
  int32_t take(uint64_t hash);
  // Forgets `hash`'s checkpoint; its slot is the next taken.
  void drop(uint64_t hash);

 private:
  struct Slot {
    uint64_t hash = 0;
    bool held = false;
    uint64_t used = 0;  // clock_ at its last find or take
  };
  int32_t first_;
  std::vector<Slot> slots_;
  std::unordered_map<uint64_t, int32_t> by_hash_;  // hash -> index into slots_
  uint64_t clock_ = 0;
};

}  // namespace vks::sched
