// The scheduler with a window pool (engine/model/kv_pools.h): a sequence's window-layer blocks are
// given back once no later token sees them, both pools count for growth, admission and preemption,
// and a cached prefix is reused only as deep as its window is still cached. A simulated runner
// writes every token into both pools and checks each token reads back exactly the tokens it sees.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>

#include "engine/common/error.h"
#include "engine/sched/scheduler.h"

namespace vks::sched {
namespace {

using namespace std::chrono_literals;

constexpr int32_t kBlock = 4;

struct WindowSim {
  WindowSim(int32_t full_blocks, int32_t window_blocks, int32_t kv_window, int32_t budget, int32_t max_seqs)
      : full(full_blocks, kBlock, true),
        win(window_blocks, kBlock, true),
        sched(config(kv_window, budget, max_seqs), full, &win),
        window(kv_window),
        full_slots(static_cast<size_t>(full_blocks) * kBlock, -1),
        window_slots(static_cast<size_t>(window_blocks) * kBlock, -1) {}

  static SchedulerConfig config(int32_t kv_window, int32_t budget, int32_t max_seqs) {
    SchedulerConfig c;
    c.max_batched_tokens = budget;
    c.max_seqs = max_seqs;
    c.kv_window = kv_window;
    return c;
  }

  Sequence* add(const std::vector<int32_t>& prompt) {
    auto s = std::make_unique<Sequence>();
    s->tokens = prompt;
    s->num_prompt_tokens = static_cast<int32_t>(prompt.size());
    s->arrival = next_arrival++;
    sched.add(s.get(), now);
    seqs.push_back(std::move(s));
    return seqs.back().get();
  }

  static int32_t read(const std::vector<int32_t>& slots, const SeqBlocks& kv, int32_t pos) {
    const int32_t block = kv.blocks.at(static_cast<size_t>(pos / kBlock));
    return block == kNoBlock ? -2 : slots[static_cast<size_t>(block * kBlock + pos % kBlock)];
  }

  // One step as a runner does it: every chunk's K/V written into both pools, then each token
  // attends (full layers: positions 0..p, window layers: p-window+1..p) and must find the right tokens.
  SchedulerOutput step() {
    SchedulerOutput out = sched.schedule(now);
    for (const ScheduledChunk& c : out.chunks) {
      for (int32_t p = c.n_past; p < c.n_past + c.n_tokens; ++p) {
        const auto at = static_cast<size_t>(p / kBlock);
        full_slots[static_cast<size_t>(c.seq->kv.blocks.at(at) * kBlock + p % kBlock)] = c.seq->tokens[p];
        const int32_t wb = c.seq->window_kv.blocks.at(at);
        if (wb == kNoBlock) {
          ADD_FAILURE() << "sequence " << c.seq->arrival << " writes position " << p << " into no window block";
          continue;
        }
        window_slots[static_cast<size_t>(wb * kBlock + p % kBlock)] = c.seq->tokens[p];
      }
    }
    for (const ScheduledChunk& c : out.chunks) {
      for (int32_t p = c.n_past; p < c.n_past + c.n_tokens; ++p) check_reads(*c.seq, p);
    }
    sched.on_step_done(out);
    for (const ScheduledChunk& c : out.chunks) {
      if (c.completes()) c.seq->tokens.push_back(7000 + c.seq->num_tokens());
    }
    const int32_t most = (window - 1 + kBlock - 1) / kBlock + 1;
    for (const Sequence* s : sched.running()) {
      max_window_held = std::max(max_window_held, BlockManager::num_held(s->window_kv));
      EXPECT_LE(BlockManager::num_held(s->window_kv), most) << "sequence " << s->arrival << " at " << s->num_computed;
    }
    EXPECT_EQ(full.check_consistency(), "");
    EXPECT_EQ(win.check_consistency(), "");
    now += 10ms;
    return out;
  }

  void check_reads(const Sequence& s, int32_t p) {
    for (int32_t q = 0; q <= p; ++q) {
      if (read(full_slots, s.kv, q) != s.tokens[q]) {
        ADD_FAILURE() << "sequence " << s.arrival << " at " << p << " reads a wrong full-pool token at " << q;
        return;
      }
    }
    for (int32_t q = std::max(0, p - window + 1); q <= p; ++q) {
      if (read(window_slots, s.window_kv, q) != s.tokens[q]) {
        ADD_FAILURE() << "sequence " << s.arrival << " at " << p << " reads " << read(window_slots, s.window_kv, q)
                      << " from the window pool at " << q << ", wrote " << s.tokens[q];
        return;
      }
    }
  }

  BlockManager full, win;
  Scheduler sched;
  int32_t window;
  std::vector<int32_t> full_slots, window_slots;
  std::vector<std::unique_ptr<Sequence>> seqs;
  int32_t max_window_held = 0;
  uint64_t next_arrival = 0;
  Clock::time_point now = Clock::time_point{} + 1h;
};

std::vector<int32_t> tokens(int32_t n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
  return t;
}

TEST(SchedulerWindow, ALongSequenceHoldsOnlyItsWindowInTheWindowPool) {
  // Window 8, blocks of 4: 210 positions in the full pool (53 blocks), at most 3 window blocks.
  WindowSim sim(64, 8, 8, 16, 2);
  Sequence* s = sim.add(tokens(10, 100));
  while (s->num_tokens() < 210) sim.step();
  EXPECT_EQ(BlockManager::num_held(s->kv), 53);
  EXPECT_EQ(sim.full.num_used(), 53);
  EXPECT_LE(sim.win.num_used(), 3);
  EXPECT_EQ(sim.max_window_held, 3);
  EXPECT_EQ(sim.sched.num_preemptions(), 0);
  sim.sched.remove(s);
  EXPECT_EQ(sim.full.num_used(), 0);
  EXPECT_EQ(sim.win.num_used(), 0);
}

TEST(SchedulerWindow, AdmissionCountsTheWindowPool) {
  // 5 window blocks: a, a 12-token prompt, takes 3; b's 12 tokens find room for 8 of them there
  // (however many full blocks are free), so its first chunk stops at 8.
  WindowSim sim(64, 5, 8, 64, 4);
  Sequence* a = sim.add(tokens(12, 100));
  SchedulerOutput out = sim.step();
  ASSERT_EQ(out.chunks.size(), 1u);
  Sequence* b = sim.add(tokens(12, 300));
  out = sim.step();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[0].seq, a);
  EXPECT_EQ(out.chunks[1].seq, b);
  EXPECT_EQ(out.chunks[1].n_tokens, 8);
  EXPECT_EQ(sim.win.num_free(), 0);
}

TEST(SchedulerWindow, PreemptsWhenTheWindowPoolRunsOut) {
  // 4 window blocks cannot hold three sequences' windows (2-3 blocks each): one is preempted,
  // recomputed later, and every sequence still reads exactly its tokens.
  WindowSim sim(200, 4, 8, 64, 3);
  std::vector<Sequence*> seqs = {sim.add(tokens(6, 100)), sim.add(tokens(6, 200)), sim.add(tokens(6, 300))};
  for (int i = 0; i < 60; ++i) sim.step();
  EXPECT_GT(sim.sched.num_preemptions(), 0);
  for (Sequence* s : seqs) sim.sched.remove(s);
  EXPECT_EQ(sim.win.num_used(), 0);
  EXPECT_EQ(sim.full.num_used(), 0);
}

TEST(SchedulerWindow, ACachedPrefixIsReusedWhileItsWindowIsCached) {
  // a computes 24 tokens (6 full blocks; the window pool keeps blocks 4 and 5 for it and caches
  // 0-3 as free). b, a's 24 tokens and 4 more, reuses all 24: its window table needs only blocks 4-5.
  WindowSim sim(64, 12, 8, 64, 2);
  Sequence* a = sim.add(tokens(24, 100));
  sim.step();
  sim.sched.remove(a);
  std::vector<int32_t> longer = tokens(24, 100);
  for (int32_t t : tokens(4, 500)) longer.push_back(t);
  Sequence* b = sim.add(longer);
  SchedulerOutput out = sim.step();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].n_past, 24);
  EXPECT_EQ(b->num_cached_prompt, 24);
  EXPECT_EQ(sim.win.hit_tokens(), 0) << "hits are counted by the full pool only";
  EXPECT_EQ(sim.full.hit_tokens(), 24);
}

TEST(SchedulerWindow, ACachedPrefixWhoseWindowWasEvictedIsRecomputed) {
  // As above, but c's 28 tokens take 7 of the 8 window blocks in between, evicting a's block 5:
  // the full pool still caches a's 24 tokens, yet no boundary of them has its window intact.
  WindowSim sim(64, 8, 8, 64, 2);
  Sequence* a = sim.add(tokens(24, 100));
  sim.step();
  sim.sched.remove(a);
  Sequence* c = sim.add(tokens(28, 900));
  sim.step();
  sim.sched.remove(c);
  std::vector<int32_t> longer = tokens(24, 100);
  for (int32_t t : tokens(4, 500)) longer.push_back(t);
  ASSERT_EQ(sim.full.match_prefix(longer).blocks.size(), 6u) << "the full pool keeps the prefix";
  Sequence* b = sim.add(longer);
  SchedulerOutput out = sim.step();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].n_past, 0);
  EXPECT_EQ(b->num_cached_prompt, 0);
}

TEST(SchedulerWindow, RandomLoadReadsTheRightTokensAndLeavesNoBlocksInUse) {
  // Shared prefixes (cache hits, cut ones too), chunked prompts, preemptions in both pools,
  // finishes and cancels; WindowSim checks every token's reads and the window bound each step.
  std::mt19937 rng(4321);
  WindowSim sim(36, 16, 8, 32, 4);
  std::vector<std::vector<int32_t>> prefixes;
  for (int p = 0; p < 4; ++p) {
    std::vector<int32_t> v;
    for (int i = 0; i < 28; ++i) v.push_back(static_cast<int32_t>(rng() % 50));
    prefixes.push_back(v);
  }
  struct Live { Sequence* s; int32_t remaining; };
  std::vector<Live> live;
  int32_t submitted = 0;
  while (submitted < 500 || !live.empty()) {
    for (; live.size() < 6 && submitted < 500; ++submitted) {
      const int32_t n = 1 + static_cast<int32_t>(rng() % 40);
      const auto& pre = prefixes[rng() % prefixes.size()];
      std::vector<int32_t> prompt(static_cast<size_t>(n));
      for (int32_t i = 0; i < n; ++i) prompt[i] = i < 28 && rng() % 40 ? pre[i] : static_cast<int32_t>(rng() % 50);
      live.push_back({sim.add(prompt), 1 + static_cast<int32_t>(rng() % 60)});
    }
    sim.step();
    for (size_t i = 0; i < live.size();) {
      const bool cancel = rng() % 100 == 0;
      if (live[i].s->num_tokens() - live[i].s->num_prompt_tokens >= live[i].remaining || cancel) {
        sim.sched.remove(live[i].s);
        live[i] = live.back();
        live.pop_back();
      } else {
        ++i;
      }
    }
  }
  EXPECT_GT(sim.sched.num_preemptions(), 0);
  EXPECT_GT(sim.full.hit_tokens(), 0);
  EXPECT_EQ(sim.full.num_used(), 0);
  EXPECT_EQ(sim.win.num_used(), 0);
  EXPECT_EQ(sim.full.check_consistency(), "");
  EXPECT_EQ(sim.win.check_consistency(), "");
}

TEST(SchedulerWindow, RefusesAWindowWithoutItsPool) {
  BlockManager full(8, kBlock, true);
  SchedulerConfig c = WindowSim::config(8, 16, 2);
  EXPECT_THROW(Scheduler(c, full, nullptr), Error);
  BlockManager other_size(8, 8, true);
  EXPECT_THROW(Scheduler(c, full, &other_size), Error);
}

}  // namespace
}  // namespace vks::sched
