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
//
// A model with recurrent layers also needs the recurrent state at the end of a reused prefix:
// its prefill stops at the prompt's last block boundary and the state there is kept
// (state_checkpoints.h), as is the state at each block boundary while it decodes (replacing the
// sequence's previous one: a conversation continues from the deepest); a new sequence resumes from
// the deepest checkpoint along its cached prefix and recomputes the rest.
//
// A model with a window pool (kv_window > 0, a second BlockManager for its window layers): every
// sequence holds blocks in both pools for the same positions, and after each step gives back the
// window pool's blocks wholly before the first position any of its later tokens sees (num_computed
// - kv_window + 1: a step's tokens, drafts and chunks included, start at num_computed). Growth,
// admission and preemption count both pools. A cached prefix is reused up to the deepest block
// boundary where the full pool's chain is cached and the window pool still caches the blocks
// covering the kv_window - 1 positions before it.
#include <chrono>
#include <cstdint>
#include <deque>
#include <vector>

#include "engine/sched/block_manager.h"
#include "engine/sched/sequence.h"
#include "engine/sched/state_checkpoints.h"

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
  // Checkpoint slots of the runner past the live ones (state_checkpoints.h): with them a recurrent
  // model reuses cached prefixes, resuming from the deepest block boundary whose state is kept.
  int32_t state_checkpoints = 0;
  // The window pool's window (the widest window layer's), 0 without a window pool.
  int32_t kv_window = 0;
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
  // Before the step, in order: the recurrent states the last steps left to keep (live slot ->
  // checkpoint slot), then the checkpoints admitted sequences resume from (-> their live slots).
  std::vector<StateCopy> state_copies;
  int32_t num_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  // window_blocks: the window pool (needed when config.kv_window > 0, else ignored).
  Scheduler(SchedulerConfig config, BlockManager& blocks, BlockManager* window_blocks = nullptr);

  // Appends a new request to the waiting queue.
  void add(Sequence* seq, Clock::time_point now);
  // Removes a sequence from whichever queue holds it and frees its blocks at once.
  void remove(Sequence* seq);
  SchedulerOutput schedule(Clock::time_point now);
  // After the step ran: advances num_computed and registers newly full blocks in the prefix cache.
  // A chunk's draft tokens are not counted: see on_draft_verified.
  // A recurrent model's states worth keeping are copied before the next step (state_copies): until
  // then no step changes a slot.
  void on_step_done(const SchedulerOutput& out);
  int32_t num_state_checkpoints() const { return checkpoints_.size(); }
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
  // The step's chunks, admissions and preemptions (schedule() adds the pending saves).
  SchedulerOutput schedule_chunks(Clock::time_point now);
  // A recurrent model resumes a cached prefix only where a checkpoint keeps its state: cuts `match`
  // back to its deepest block with one (to nothing without one); returns that checkpoint's slot or -1.
  int32_t cut_to_checkpoint(PrefixMatch& match);
  // The last block boundary before the end of the prompt, where a recurrent model's prefill stops
  // for a checkpoint; n shortened so a chunk from num_computed does not cross it.
  int32_t stop_at_prompt_boundary(const Sequence* s, int32_t n) const;
  int32_t prompt_boundary(const Sequence* s) const;
  // After a step: keeps s's state if s's computed tokens end at a boundary worth a checkpoint.
  void checkpoint(Sequence* s);
  // The window pool's part of a cached prefix: cuts `match` back to its deepest block boundary whose
  // window is cached and returns the window pool's match for that many blocks.
  PrefixMatch cut_to_window(PrefixMatch& match, const Sequence* s) const;
  // The first window-pool block any token at or after position pos still sees.
  size_t first_window_block(int32_t pos) const;
  // Tokens s may grow by in both pools (its held blocks plus the free ones).
  int32_t room(const Sequence* s) const;
  bool grow(Sequence* s, int32_t n_tokens);
  void release_blocks(Sequence* s);
  // Registers s's newly computed full blocks, then gives back the window blocks it no longer sees.
  void commit(Sequence* s);

  SchedulerConfig config_;
  BlockManager& blocks_;
  BlockManager* window_;  // the window pool, or null
  std::deque<Sequence*> waiting_;   // preempted ones at the front
  std::vector<Sequence*> running_;  // admission order
  std::vector<int32_t> free_state_slots_;  // the lowest last
  StateCheckpoints checkpoints_;
  std::vector<StateCopy> pending_saves_;  // checkpoints taken, copied before the next step
  int64_t num_preemptions_ = 0;
};

}  // namespace vks::sched
