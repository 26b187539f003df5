#pragma once
// Continuous batching. Each step fills a token budget (max_batched_tokens) and a sequence limit
// (max_seqs): first one decode token for every running sequence, then prefill chunks (running
// sequences still prefilling, then admissions from the waiting queue), so a long prompt is split
// across steps while running streams keep flowing.
//
// Order of importance: FCFS = arrival order. kPriority = effective priority, higher first, then
// arrival; effective priority = priority + (time waiting in the queue) / aging_ms. Bound: a request
// of priority p that has waited (q - p) * aging_ms is ahead of every request of priority <= q that
// arrives later, so under a sustained stream of requests of priority at most q it is admitted after
// at most (q - p) * aging_ms plus the time needed to serve the requests that were ahead of it then.
// (Running sequences are never preempted to admit a waiting one, only to make room for running
// ones.)
//
// Out of KV blocks: the victim is the least important running sequence not yet scheduled in this
// step (lowest priority, then newest); its blocks are freed and it goes back to the front of the
// waiting queue. It is later recomputed from prompt + generated tokens (its full blocks are usually
// still in the prefix cache), and the sampled tokens are never redrawn.
#include <chrono>
#include <cstdint>
#include <deque>
#include <vector>

#include "engine/sched/block_manager.h"
#include "engine/sched/sequence.h"

namespace vks::sched {

struct SchedulerConfig {
  int32_t max_batched_tokens = 256;
  int32_t max_seqs = 16;
  bool priority_policy = false;
  double aging_ms = 1000.0;  // one priority level per aging_ms of waiting (kPriority only)
  // Draft tokens a step may verify in all (each is one more output row of the runner's, whose
  // rows are bounded: the runner's max_step_seqs minus max_seqs). Drafts never preempt anything:
  // a decode gets what fits of its draft after its own token.
  int32_t max_draft_tokens = 0;
  // Recurrent state slots of the runner (0: the model keeps all its state in the paged KV). A running
  // sequence holds one: admission waits for a free one, preemption and removal give it back.
  int32_t state_slots = 0;
};

struct ScheduledChunk {
  Sequence* seq = nullptr;
  int32_t n_past = 0;    // num_computed when scheduled
  int32_t n_tokens = 0;  // the last n_draft of them are seq->draft[0, n_draft)
  int32_t n_draft = 0;
  bool completes() const { return n_past + n_tokens - n_draft == seq->num_tokens(); }  // produces a token
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;  // decodes first, then prefill chunks
  std::vector<Sequence*> admitted;     // moved from waiting to running in this step
  std::vector<Sequence*> preempted;    // moved from running back to waiting in this step
  int32_t num_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, BlockManager& blocks);

  // Appends a new request to the waiting queue.
  void add(Sequence* seq, Clock::time_point now);
  // Removes a sequence from whichever queue holds it and frees its blocks at once.
  void remove(Sequence* seq);
  SchedulerOutput schedule(Clock::time_point now);
  // After the step ran: advances num_computed and registers newly full blocks in the prefix cache.
  // A chunk's draft tokens are not counted: see on_draft_verified.
  void on_step_done(const SchedulerOutput& out);
  // After a running sequence's draft was verified and its first `accepted` tokens appended to its
  // tokens (followed by the target's own next token): counts them as computed, registers the
  // blocks they fill and frees the blocks that only held rejected drafts.
  void on_draft_verified(Sequence* seq, int32_t accepted);

  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  const std::deque<Sequence*>& waiting() const { return waiting_; }
  const std::vector<Sequence*>& running() const { return running_; }
  int32_t waiting_position(const Sequence* seq, Clock::time_point now) const;
  int64_t num_preemptions() const { return num_preemptions_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  // True when a is more important than b (scheduled first, preempted last).
  bool more_important(const Sequence* a, const Sequence* b, Clock::time_point now, bool waiting) const;
  std::vector<Sequence*> waiting_in_order(Clock::time_point now) const;
  void preempt(Sequence* victim, Clock::time_point now, SchedulerOutput& out);
  // Least important running sequence not scheduled in this step (the current one included).
  Sequence* pick_victim(const std::vector<Sequence*>& unscheduled) const;
  void release_state_slot(Sequence* seq);

  SchedulerConfig config_;
  BlockManager& blocks_;
  std::deque<Sequence*> waiting_;   // preempted ones at the front
  std::vector<Sequence*> running_;  // admission order
  std::vector<int32_t> free_state_slots_;  // the lowest last
  int64_t num_preemptions_ = 0;
};

}  // namespace vks::sched
