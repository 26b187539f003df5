#pragma once
// Drafting with a draft model: k greedy tokens per sequence from a second, small model that shares
// the target's vocabulary, all the step's sequences batched (one draft-model step per draft token,
// after one that feeds each sequence's tokens not yet in the draft model's cache); a constrained
// request's draft tokens are the best ones its grammar allows.
// The draft model's KV pool is split into fixed slots, one per sequence (least recently used one
// taken over when all are held). A slot remembers the tokens whose K/V it holds, and every draft
// starts from the longest prefix of those equal to the sequence's tokens now: rejected draft
// tokens, preemption, a slot taken over by another sequence (whose K/V at a position depends only
// on the tokens up to it) all roll back by that comparison, with no bookkeeping to keep in sync.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/sched/drafter.h"

namespace vks::sched {

class ModelDrafter : public Drafter {
 public:
  ModelDrafter(std::unique_ptr<ModelRunner> runner, int32_t slots);
  void draft(std::span<const DraftJob> jobs) override;
  int32_t unfed_tokens(const Sequence& seq) const override;
  FeedCost last_feed() const override { return last_feed_; }
  bool follows_grammar() const override { return true; }
  bool acceptance_carries_over() const override { return true; }

 private:
  struct Slot {
    const Sequence* seq = nullptr;
    std::vector<int32_t> blocks;  // its fixed share of the pool
    std::vector<int32_t> fed;     // the tokens whose K/V it holds, from position 0
    uint64_t last_used = 0;
  };
  struct Active {
    const DraftJob* job = nullptr;
    Slot* slot = nullptr;
    int32_t max = 0;              // draft tokens wanted (what fits the slot)
  };
  // The job's next draft token from the draft model's logits row: the best one its grammar allows
  // (advancing the grammar by it); -1 where the grammar allows none.
  static int32_t constrained_pick(const DraftJob& job, std::span<float> logits);
  Slot* slot_for(const Sequence* seq);
  // How many of `tokens` (non-empty) the slot's K/V still hold for a draft: the common prefix,
  // short of the last token, which is fed again for its logits.
  static size_t kept(const Slot& slot, const std::vector<int32_t>& tokens);
  // Feeds each active sequence its tokens past slot->fed (chunked to the runner's limits) and
  // takes the argmax after the last as its first draft token.
  void catch_up();
  // Appends a chunk of `tokens` (fed after a.slot->fed) to batch_; `output`: its last token's
  // argmax is a's next draft token.
  void add_chunk(Active& a, std::span<const int32_t> tokens, bool output);
  // Runs batch_ and appends each output chunk's argmax to its sequence's draft.
  void run_batch();
  // Empties batch_, keeping its chunks' block tables for the next chunks.
  void clear_batch();

  std::unique_ptr<ModelRunner> runner_;
  int32_t slot_tokens_ = 0;
  std::vector<Slot> slots_;
  uint64_t clock_ = 0;
  std::vector<Active> active_;
  StepBatch batch_;
  std::vector<Active*> owners_;  // per chunk of batch_: whose draft its argmax extends, or null
  // Block tables of chunks already run: a new chunk takes one, so drafting allocates none per step.
  std::vector<std::vector<int32_t>> spare_tables_;
  StepResult result_;
  FeedCost last_feed_;
};

}  // namespace vks::sched
