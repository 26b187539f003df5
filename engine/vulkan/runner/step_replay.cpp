#include "engine/vulkan/runner/step_replay.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/vulkan/runner/attn_kernels.h"

namespace vks::vk {

std::optional<ReplayKey> replay_key(const StepBatch& batch, const StepInputs& in, uint32_t split_keys) {
  const auto n = static_cast<size_t>(in.n_tokens);
  if (n == 0 || batch.seqs.size() != n || !in.hidden_rows.empty() || in.out_rows.size() != n) return std::nullopt;
  for (const SeqChunk& s : batch.seqs) {
    if (s.n_tokens != 1) return std::nullopt;
  }
  // record_logits norms the out rows run by run: rows 0..n-1 are one run.
  for (size_t k = 0; k < n; ++k) {
    if (in.out_rows[k] != static_cast<int32_t>(k)) return std::nullopt;
  }
  return ReplayKey{static_cast<uint32_t>(n),
                   static_cast<uint32_t>(attention_split_count(static_cast<uint64_t>(in.longest_keys), split_keys)),
                   in.n_full > 0};
}

StepReplays::StepReplays(const Device& device, size_t capacity) : device_(device), capacity_(capacity) {
  if (capacity == 0) throw Error(ErrorCode::kInternal, "step replays: capacity 0");
}

StepReplays::Recording& StepReplays::find_or_make(const ReplayKey& key) {
  ++clock_;
  for (Slot& s : slots_) {
    if (s.key == key) {
      s.last_use = clock_;
      return s.recording;
    }
  }
  if (slots_.size() < capacity_) {
    slots_.push_back(Slot{key, clock_, Recording{device_.create_command_buffer(), false}});
    return slots_.back().recording;
  }
  Slot& oldest = *std::min_element(slots_.begin(), slots_.end(),
                                   [](const Slot& a, const Slot& b) { return a.last_use < b.last_use; });
  oldest.key = key;
  oldest.last_use = clock_;
  oldest.recording.recorded = false;  // begin() resets its command buffer and descriptor sets
  return oldest.recording;
}

}  // namespace vks::vk
