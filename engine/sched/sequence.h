#pragma once
// What the scheduler knows about one request: its tokens (prompt, then generated), how many of them
// are in the KV cache, the blocks holding them and where it is in its life.
#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/sched/block_manager.h"

namespace vks::sched {

using Clock = std::chrono::steady_clock;

// Milliseconds from a to b (the engine's timings and latency figures).
inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

enum class SeqState { kWaiting, kRunning, kFinished };

struct Sequence {
  uint64_t arrival = 0;              // submission order, lower = older
  int32_t priority = 0;              // higher first (kPriority policy)
  Clock::time_point submitted_at{};  // aging counts from here
  std::vector<int32_t> tokens;       // prompt followed by the generated tokens
  int32_t num_prompt_tokens = 0;
  int32_t num_computed = 0;          // tokens whose K/V are in the cache
  int32_t num_cached_prompt = 0;     // prompt tokens served from the prefix cache at first admission
  bool admitted_before = false;
  int32_t num_preemptions = 0;
  bool use_prefix_cache = true;      // false: always computed from position 0 (embeddings need every row)
  SeqState state = SeqState::kWaiting;
  SeqBlocks kv;
  // A model with a window pool (engine/model/kv_pools.h): the window layers' blocks, the same
  // positions as kv's; those no later token sees are given back (kNoBlock).
  SeqBlocks window_kv;
  // A model with recurrent layers: the runner's state slot this sequence holds while running (-1: none).
  int32_t state_slot = -1;
  // Speculative decoding: tokens guessed to follow `tokens`, proposed before each step for a
  // decoding sequence and verified by it (the scheduler may shorten it). Never in `tokens`, never
  // counted as computed and never registered in the prefix cache until verified.
  std::vector<int32_t> draft;

  int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t num_uncomputed() const { return num_tokens() - num_computed; }
  // Decoding: only the last sampled token is missing from the cache.
  bool is_decoding() const { return num_computed > 0 && num_uncomputed() == 1 && num_tokens() > num_prompt_tokens; }
};

}  // namespace vks::sched
