#include "engine/sched/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "engine/common/error.h"

namespace vks::sched {
namespace {

using namespace std::chrono_literals;

struct Sim {
  Sim(int32_t num_blocks, int32_t block_size, SchedulerConfig cfg, bool cache = true)
      : bm(num_blocks, block_size, cache), sched(cfg, bm), slots(static_cast<size_t>(num_blocks) * block_size, -1) {}

  Sequence* add(int32_t n_prompt, int32_t priority = 0, int32_t first = 100, Clock::time_point at = {}) {
    auto s = std::make_unique<Sequence>();
    for (int32_t i = 0; i < n_prompt; ++i) s->tokens.push_back(first + i);
    s->num_prompt_tokens = n_prompt;
    s->priority = priority;
    s->arrival = next_arrival++;
    s->submitted_at = at == Clock::time_point{} ? now : at;
    sched.add(s.get(), now);
    seqs.push_back(std::move(s));
    return seqs.back().get();
  }

  // Runs one step like a runner would: writes K/V slots, checks every completing sequence reads back
  // exactly its own tokens through its block table, then "samples" a token.
  SchedulerOutput step() {
    SchedulerOutput out = sched.schedule(now);
    const int32_t bs = bm.block_size();
    run_states(out);
    for (const ScheduledChunk& c : out.chunks) {
      EXPECT_GE(static_cast<int32_t>(c.seq->kv.blocks.size()) * bs, c.n_past + c.n_tokens);
      for (int32_t p = c.n_past; p < c.n_past + c.n_tokens; ++p) {
        slots[c.seq->kv.blocks[p / bs] * bs + p % bs] = c.seq->tokens[p];
      }
    }
    for (const ScheduledChunk& c : out.chunks) {
      if (!c.completes()) continue;
      for (int32_t p = 0; p < c.seq->num_tokens(); ++p) {
        const int32_t got = slots[c.seq->kv.blocks[p / bs] * bs + p % bs];
        if (got != c.seq->tokens[p]) {
          ADD_FAILURE() << "sequence " << c.seq->arrival << " reads token " << got << " at " << p << ", wrote "
                        << c.seq->tokens[p];
          break;
        }
      }
    }
    sched.on_step_done(out);
    for (const ScheduledChunk& c : out.chunks) {
      if (c.completes()) c.seq->tokens.push_back(7000 + c.seq->num_tokens());
    }
    EXPECT_EQ(bm.check_consistency(), "");
    EXPECT_LE(out.num_tokens, sched.config().max_batched_tokens);
    EXPECT_LE(static_cast<int32_t>(out.chunks.size()), sched.config().max_seqs);
    now += 10ms;
    return out;
  }

  // A recurrent model's state, simulated: each slot folds the tokens it ran (a sequence starting at
  // position 0 starts afresh); after every chunk a sequence's live slot must hold the fold of all its
  // computed tokens, whatever was resumed from a checkpoint.
  static uint64_t fold(uint64_t state, int32_t token) { return state * 1000003u + static_cast<uint64_t>(token) + 1; }
  void run_states(const SchedulerOutput& out) {
    if (state.empty()) return;
    for (const StateCopy& c : out.state_copies) {
      state.at(static_cast<size_t>(c.to)) = state.at(static_cast<size_t>(c.from));
      ++state_copies;
    }
    for (const ScheduledChunk& c : out.chunks) {
      uint64_t& s = state.at(static_cast<size_t>(c.seq->state_slot));
      if (c.n_past == 0) s = 0;
      for (int32_t p = c.n_past; p < c.n_past + c.n_tokens; ++p) s = fold(s, c.seq->tokens[p]);
      uint64_t want = 0;
      for (int32_t p = 0; p < c.n_past + c.n_tokens; ++p) want = fold(want, c.seq->tokens[p]);
      EXPECT_EQ(s, want) << "sequence " << c.seq->arrival << " at " << c.n_past + c.n_tokens;
    }
  }

  BlockManager bm;
  Scheduler sched;
  std::vector<uint64_t> state;  // [state_slots + state_checkpoints] when simulating a recurrent model
  int64_t state_copies = 0;
  std::vector<int32_t> slots;
  std::vector<std::unique_ptr<Sequence>> seqs;
  uint64_t next_arrival = 0;
  Clock::time_point now = Clock::time_point{} + 1h;
};

SchedulerConfig cfg(int32_t budget, int32_t max_seqs, bool priority = false, double aging_ms = 1000) {
  SchedulerConfig c;
  c.max_batched_tokens = budget;
  c.max_seqs = max_seqs;
  c.priority_policy = priority;
  c.aging_ms = aging_ms;
  return c;
}

TEST(Scheduler, DecodesFirstThenPrefillChunks) {
  Sim sim(64, 4, cfg(8, 4));
  Sequence* a = sim.add(3);
  auto o = sim.step();
  ASSERT_EQ(o.chunks.size(), 1u);
  EXPECT_EQ(o.chunks[0].n_tokens, 3);
  EXPECT_EQ(a->num_tokens(), 4);  // the chunk completed the prompt and produced a token
  Sequence* b = sim.add(20, 0, 500);
  for (int32_t want : {7, 7, 6}) {
    o = sim.step();
    ASSERT_EQ(o.chunks.size(), 2u);
    EXPECT_EQ(o.chunks[0].seq, a);  // the decode comes first
    EXPECT_EQ(o.chunks[0].n_tokens, 1);
    EXPECT_EQ(o.chunks[1].seq, b);
    EXPECT_EQ(o.chunks[1].n_tokens, want);
    EXPECT_EQ(o.num_tokens, 1 + want);
  }
  EXPECT_EQ(b->num_tokens(), 21);
  o = sim.step();
  EXPECT_EQ(o.num_tokens, 2);  // two decodes
}

TEST(Scheduler, ChunkedPrefillSplitsLongPrompt) {
  Sim sim(64, 4, cfg(16, 4));
  Sequence* a = sim.add(50);
  std::vector<int32_t> chunks;
  while (a->num_tokens() == 50) chunks.push_back(sim.step().chunks.at(0).n_tokens);
  EXPECT_EQ(chunks, (std::vector<int32_t>{16, 16, 16, 2}));
}

TEST(Scheduler, SequenceLimitAndFcfsOrder) {
  Sim sim(64, 4, cfg(64, 2));
  std::vector<Sequence*> s;
  for (int i = 0; i < 5; ++i) s.push_back(sim.add(3, 0, 100 * (i + 1)));
  auto o = sim.step();
  ASSERT_EQ(o.admitted.size(), 2u);
  EXPECT_EQ(o.admitted[0], s[0]);
  EXPECT_EQ(o.admitted[1], s[1]);
  EXPECT_EQ(sim.sched.num_waiting(), 3);
  sim.sched.remove(s[0]);
  o = sim.step();
  ASSERT_EQ(o.admitted.size(), 1u);
  EXPECT_EQ(o.admitted[0], s[2]);
  EXPECT_EQ(sim.sched.waiting_position(s[4], sim.now), 1);
}

TEST(Scheduler, HeadOfLineWaitsForBlocks) {
  // 8 blocks of 4 = 32 tokens. A holds 24, the 12-token head cannot get a block, a 2-token one could.
  Sim sim(8, 4, cfg(64, 4));
  sim.add(24);
  sim.step();
  Sequence* big = sim.add(30, 0, 300);
  Sequence* small = sim.add(2, 0, 400);
  auto o = sim.step();
  // A decodes (needs a 7th block at 25 tokens), big gets the last block's worth; small waits behind.
  EXPECT_EQ(o.admitted.size(), 1u);
  EXPECT_EQ(o.admitted[0], big);
  EXPECT_EQ(small->state, SeqState::kWaiting);
}

TEST(Scheduler, PriorityHigherFirstFcfsWithin) {
  Sim sim(64, 4, cfg(64, 1, true, 1e12));
  Sequence* low = sim.add(2, 0);
  Sequence* high = sim.add(2, 5);
  Sequence* mid1 = sim.add(2, 1);
  Sequence* mid2 = sim.add(2, 1);
  std::vector<Sequence*> order;
  for (int i = 0; i < 4; ++i) {
    auto o = sim.step();
    ASSERT_EQ(o.admitted.size(), 1u);
    order.push_back(o.admitted[0]);
    sim.sched.remove(o.admitted[0]);
  }
  EXPECT_EQ(order, (std::vector<Sequence*>{high, mid1, mid2, low}));
}

// Under a sustained stream of priority-10 requests, a priority-0 request is admitted within the
// documented bound ((10 - 0) * aging_ms plus the queue ahead of it); without aging it starves.
int32_t steps_until_low_admitted(double aging_ms, int32_t max_steps) {
  Sim sim(256, 4, cfg(64, 1, true, aging_ms));
  Sequence* low = sim.add(2, 0);
  for (int32_t step = 0; step < max_steps; ++step) {
    sim.add(2, 10, 1000 + step);  // one new high-priority request per 10 ms step
    sim.add(2, 10, 2000 + step);
    auto o = sim.step();
    for (Sequence* s : o.admitted) {
      if (s == low) return step;
      sim.sched.remove(s);  // served in one step
    }
  }
  return -1;
}

TEST(Scheduler, AgingPreventsStarvation) {
  // aging_ms = 10 (one step): after 10 levels = 10 steps low outranks every newcomer; the backlog
  // ahead of it then (older high-priority ones that also aged) is at most the ~10 queued earlier.
  const int32_t admitted = steps_until_low_admitted(10, 200);
  EXPECT_GE(admitted, 10);
  EXPECT_LE(admitted, 2 * 10 + 2);
  EXPECT_EQ(steps_until_low_admitted(1e12, 200), -1);
}

TEST(Scheduler, PreemptsNewestAndRequeuesAtFront) {
  // 6 blocks of 2. Two sequences of 6 prompt tokens hold 3 blocks each; the first decode that needs
  // a 4th block preempts the newest.
  Sim sim(6, 2, cfg(64, 4), false);
  Sequence* a = sim.add(6, 0, 100);
  Sequence* b = sim.add(6, 0, 200);
  Sequence* c = sim.add(3, 0, 300);
  auto o = sim.step();  // a, b admitted (c cannot: no block left)
  ASSERT_EQ(o.admitted.size(), 2u);
  EXPECT_EQ(a->num_tokens(), 7);
  EXPECT_EQ(c->state, SeqState::kWaiting);
  o = sim.step();  // a decodes position 6 -> needs a 4th block: preempts b (newest)
  ASSERT_EQ(o.preempted.size(), 1u);
  EXPECT_EQ(o.preempted[0], b);
  EXPECT_EQ(b->state, SeqState::kWaiting);
  EXPECT_EQ(b->num_computed, 0);
  EXPECT_TRUE(b->kv.blocks.empty());
  EXPECT_EQ(sim.sched.waiting().front(), b);  // ahead of c
  EXPECT_EQ(o.admitted.size(), 0u);           // no admissions in a step that preempted
  EXPECT_EQ(sim.sched.num_preemptions(), 1);
  sim.sched.remove(a);
  o = sim.step();
  ASSERT_EQ(o.admitted.size(), 2u);
  EXPECT_EQ(o.admitted[0], b);  // front of the queue, before the older-queued c
  EXPECT_EQ(o.chunks[0].n_tokens, 7);  // recompute prompt + the generated token, nothing resampled
  EXPECT_EQ(o.chunks[0].n_past, 0);
}

TEST(Scheduler, PreemptsLowestPriorityUnderPriorityPolicy) {
  Sim sim(6, 2, cfg(64, 4, true, 1e12), false);
  Sequence* lo = sim.add(6, -2, 200);  // older but lower priority
  Sequence* hi = sim.add(6, 3, 100);
  sim.step();
  auto o = sim.step();
  ASSERT_EQ(o.preempted.size(), 1u);
  EXPECT_EQ(o.preempted[0], lo);
  EXPECT_EQ(hi->state, SeqState::kRunning);
}

TEST(Scheduler, PrefixCacheHitSkipsComputedBlocks) {
  Sim sim(64, 4, cfg(64, 4));
  Sequence* a = sim.add(18, 0, 100);
  sim.step();
  sim.sched.remove(a);
  Sequence* b = sim.add(18, 0, 100);  // same prompt
  auto o = sim.step();
  ASSERT_EQ(o.chunks.size(), 1u);
  EXPECT_EQ(o.chunks[0].n_past, 16);
  EXPECT_EQ(o.chunks[0].n_tokens, 2);
  EXPECT_EQ(b->num_cached_prompt, 16);
  EXPECT_EQ(sim.bm.hit_tokens(), 16);
  EXPECT_EQ(sim.bm.query_tokens(), 36);
}

// 1,000 random requests with shared prefixes, random cancels and a pool small enough to force
// preemptions: every step's block tables read back the right tokens, and at the end no block is in
// use and every cache entry is consistent.
TEST(Scheduler, RandomLoadLeavesNoBlocksInUse) {
  std::mt19937 rng(1234);
  Sim sim(40, 4, cfg(48, 8));
  std::vector<std::vector<int32_t>> prefixes;
  for (int p = 0; p < 6; ++p) {
    std::vector<int32_t> v;
    for (int i = 0; i < 24; ++i) v.push_back(static_cast<int32_t>(rng() % 50));
    prefixes.push_back(v);
  }
  struct Live { Sequence* s; int32_t remaining; };
  std::vector<Live> live;
  int32_t submitted = 0, finished = 0, cancelled = 0;
  while (submitted < 1000 || !live.empty()) {
    for (int k = 0; k < 3 && submitted < 1000; ++k, ++submitted) {
      const int32_t n = 1 + static_cast<int32_t>(rng() % 60);
      Sequence* s = sim.add(n, static_cast<int32_t>(rng() % 3));
      const auto& pre = prefixes[rng() % prefixes.size()];
      for (int32_t i = 0; i < n; ++i) s->tokens[i] = i < 24 && rng() % 8 ? pre[i] : static_cast<int32_t>(rng() % 50);
      live.push_back({s, 1 + static_cast<int32_t>(rng() % (100 - n))});
    }
    sim.step();
    for (size_t i = 0; i < live.size();) {
      Live& l = live[i];
      const int32_t generated = l.s->num_tokens() - l.s->num_prompt_tokens;
      const bool cancel = rng() % 100 == 0;
      if (generated >= l.remaining || cancel) {
        sim.sched.remove(l.s);
        (cancel ? cancelled : finished)++;
        live[i] = live.back();
        live.pop_back();
      } else {
        ++i;
      }
    }
  }
  EXPECT_EQ(finished + cancelled, 1000);
  EXPECT_GT(cancelled, 0);
  EXPECT_GT(sim.sched.num_preemptions(), 0);
  EXPECT_GT(sim.bm.hit_tokens(), 0);
  EXPECT_EQ(sim.sched.num_running(), 0);
  EXPECT_EQ(sim.sched.num_waiting(), 0);
  EXPECT_EQ(sim.bm.num_used(), 0);
  EXPECT_LE(sim.bm.num_cached(), sim.bm.num_blocks());
  EXPECT_EQ(sim.bm.check_consistency(), "");
}

TEST(Scheduler, StateSlotsBoundRunningSequencesAndComeBackOnPreemptionAndRemoval) {
  // 2 state slots, room for 4 sequences: the third waits for a slot; a removed or preempted
  // sequence gives its slot back, and a running one always holds a distinct slot.
  SchedulerConfig c = cfg(64, 4);
  c.state_slots = 2;
  Sim sim(10, 4, c, false);
  Sequence* a = sim.add(6);
  Sequence* b = sim.add(6, 0, 200);
  Sequence* third = sim.add(6, 0, 300);
  sim.step();
  EXPECT_EQ(a->state_slot, 0);
  EXPECT_EQ(b->state_slot, 1);
  EXPECT_EQ(third->state, SeqState::kWaiting);
  EXPECT_EQ(third->state_slot, -1);
  sim.sched.remove(a);
  EXPECT_EQ(a->state_slot, -1);
  sim.step();
  EXPECT_EQ(third->state, SeqState::kRunning);
  EXPECT_EQ(third->state_slot, 0);
  // 10 blocks of 4: b and third grow until one is preempted; the survivor keeps its slot, the victim's
  // is free again.
  for (int i = 0; i < 20 && sim.sched.num_preemptions() == 0; ++i) sim.step();
  ASSERT_GT(sim.sched.num_preemptions(), 0);
  Sequence* victim = b->state == SeqState::kWaiting ? b : third;
  Sequence* survivor = victim == b ? third : b;
  EXPECT_EQ(victim->state_slot, -1);
  EXPECT_GE(survivor->state_slot, 0);
  sim.sched.remove(survivor);
  sim.step();
  EXPECT_EQ(victim->state, SeqState::kRunning);
  EXPECT_EQ(victim->state_slot, 0) << "the lowest free slot";
}

TEST(Scheduler, CheckpointsLetARecurrentModelResumeCachedPrefixes) {
  // Blocks of 4, a 10-token prompt: prefill stops at 8 (its last boundary) for a checkpoint; the
  // same prompt again resumes there (8 cached, the checkpoint copied into its slot first).
  SchedulerConfig c = cfg(64, 4);
  c.state_slots = 2;
  c.state_checkpoints = 2;
  Sim sim(40, 4, c);
  sim.state.assign(4, 0);
  Sequence* a = sim.add(10);
  SchedulerOutput out = sim.step();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].n_tokens, 8);
  // A twin arriving now resumes from the checkpoint being taken: the save is copied first.
  Sequence* twin = sim.add(10);
  out = sim.step();
  ASSERT_EQ(out.state_copies.size(), 2u);
  EXPECT_EQ(out.state_copies[0].from, a->state_slot);
  EXPECT_GE(out.state_copies[0].to, 2) << "a checkpoint slot, past the live ones";
  const int32_t kept = out.state_copies[0].to;
  EXPECT_EQ(out.state_copies[1].from, kept);
  EXPECT_EQ(out.state_copies[1].to, twin->state_slot);
  EXPECT_EQ(twin->num_cached_prompt, 8);
  EXPECT_EQ(out.chunks[0].n_tokens, 2);
  sim.sched.remove(a);
  sim.sched.remove(twin);
  Sequence* again = sim.add(10);
  out = sim.step();
  EXPECT_EQ(again->num_cached_prompt, 8);
  ASSERT_EQ(out.state_copies.size(), 1u);
  EXPECT_EQ(out.state_copies[0].from, kept);
  EXPECT_EQ(out.state_copies[0].to, again->state_slot);
  sim.sched.remove(again);

  // Without checkpoint slots the prefix is not reused.
  c.state_checkpoints = 0;
  Sim plain(40, 4, c);
  plain.add(10);
  plain.step();
  plain.step();
  plain.sched.remove(plain.seqs[0].get());
  Sequence* none = plain.add(10);
  plain.step();
  EXPECT_EQ(none->num_cached_prompt, 0);
}

TEST(Scheduler, RandomLoadResumesRecurrentStatesCorrectly) {
  // Shared prefixes, preemptions, finishes and cancels; the simulated state (Sim::run_states) checks
  // every chunk runs on exactly the state of its sequence's tokens so far.
  std::mt19937 rng(99);
  SchedulerConfig c = cfg(32, 4);
  c.state_slots = 3;
  c.state_checkpoints = 4;
  Sim sim(30, 4, c);
  sim.state.assign(7, 0);
  std::vector<int32_t> prefix;
  for (int i = 0; i < 20; ++i) prefix.push_back(static_cast<int32_t>(rng() % 50));
  struct Live { Sequence* s; int32_t remaining; };
  std::vector<Live> live;
  for (int32_t submitted = 0; submitted < 300 || !live.empty();) {
    if (submitted < 300 && live.size() < 6) {
      const int32_t n = 2 + static_cast<int32_t>(rng() % 30);
      Sequence* s = sim.add(n);
      for (int32_t i = 0; i < n; ++i) s->tokens[i] = i < 20 && rng() % 6 ? prefix[i] : static_cast<int32_t>(rng() % 50);
      live.push_back({s, 1 + static_cast<int32_t>(rng() % 40)});
      ++submitted;
    }
    sim.step();
    for (size_t i = 0; i < live.size();) {
      if (live[i].s->num_tokens() - live[i].s->num_prompt_tokens >= live[i].remaining || rng() % 80 == 0) {
        sim.sched.remove(live[i].s);
        live[i] = live.back();
        live.pop_back();
      } else {
        ++i;
      }
    }
  }
  EXPECT_GT(sim.sched.num_preemptions(), 0);
  EXPECT_GT(sim.bm.hit_tokens(), 0);
  EXPECT_GT(sim.state_copies, 0);
  EXPECT_EQ(sim.bm.num_used(), 0);
}

TEST(StateCheckpoints, KeepsTheMostRecentlyUsedStates) {
  StateCheckpoints c(/*first_slot=*/3, /*slots=*/2);
  EXPECT_TRUE(c.enabled());
  const int32_t a = c.take(11);
  const int32_t b = c.take(22);
  EXPECT_EQ(std::min(a, b), 3);
  EXPECT_EQ(std::max(a, b), 4);
  EXPECT_EQ(c.take(11), -1) << "kept already: nothing to copy";
  EXPECT_EQ(c.find(22), b);  // 22 used last: 11 is the least recently used
  EXPECT_EQ(c.take(33), a);
  EXPECT_EQ(c.find(11), -1);
  EXPECT_EQ(c.find(33), a);
  c.drop(22);
  EXPECT_EQ(c.size(), 1);
  EXPECT_EQ(c.take(44), b) << "a dropped checkpoint's slot is taken first";
  EXPECT_FALSE(StateCheckpoints(3, 0).enabled());
  EXPECT_EQ(StateCheckpoints(3, 0).take(1), -1);
}

TEST(Scheduler, RejectsBadConfig) {
  BlockManager bm(4, 4, true);
  EXPECT_THROW(Scheduler(cfg(4, 0), bm), Error);
  EXPECT_THROW(Scheduler(cfg(2, 4), bm), Error);
}

}  // namespace
}  // namespace vks::sched
