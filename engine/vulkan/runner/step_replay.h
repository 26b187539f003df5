#pragma once
// Decode steps recorded once and replayed (issue 35: the host time of a step). A step whose
// sequences each bring one token records the same commands as every other such step with as many
// tokens, the same attention split count and the same read-backs: its tokens, positions, slots and
// block tables are data in buffers, not commands. So its command buffer is recorded the first time
// its key comes and submitted again while the key recurs; the least recently used recording makes
// way for a new key past the capacity. Prefill chunks, verify rows, hidden rows, profiled steps and
// steps with host experts (which submit mid-step) are recorded every time, as before.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/model/model_runner.h"
#include "engine/vulkan/core/command.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/runner/step_inputs.h"

namespace vks::vk {

// What a decode step's recording depends on beyond the runner's own buffers and weights.
struct ReplayKey {
  uint32_t n_tokens = 0;  // = sequences, = logits rows
  // attention_split_count of the furthest token's keys: the attention's grid (record_attention)
  // is the one command shaped by the step's context length.
  uint32_t key_splits = 0;
  bool full_logits = false;  // the logits rows are copied back too
  bool operator==(const ReplayKey&) const = default;
};

// The key of a step that can be replayed: every sequence brings one token and wants its logits
// (argmax or full); nullopt for any other step. split_keys: the runner's attention split size.
std::optional<ReplayKey> replay_key(const StepBatch& batch, const StepInputs& in, uint32_t split_keys);

class StepReplays {
 public:
  struct Recording {
    CommandBuffer cmd;
    bool recorded = false;  // set by the recorder once cmd holds the whole step
  };

  StepReplays(const Device& device, size_t capacity);

  // The recording for `key`: the one made before, or an empty one to record (`recorded` false; a
  // new command buffer, or the least recently used one's once `capacity` are held).
  Recording& find_or_make(const ReplayKey& key);
  size_t size() const { return slots_.size(); }

 private:
  struct Slot {
    ReplayKey key;
    uint64_t last_use = 0;
    Recording recording;
  };
  const Device& device_;
  size_t capacity_;
  uint64_t clock_ = 0;
  std::vector<Slot> slots_;
};

}  // namespace vks::vk
