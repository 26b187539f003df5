// The engine on the window fixtures (gemma3-tiny: 5 window layers of 8 and a global one; gemma2-tiny
// and gpt-oss-tiny: every other layer; gemma4-e-tiny: windows of 16 and layers sharing KV) with the CPU runner's window pool (engine/model/kv_pools.h):
// a sequence far longer than the window holds only ~the window there (read from the per-kind KV
// stats while it runs), and the greedy request gives llama.cpp's 32 ids alone, batched, chunked,
// preempted (out of window blocks and out of full ones), from the prefix cache, and the tokens of a
// one-pool runner (the window kept whole) on a continued conversation, whose cache hits match it.
// Built twice: with the CPU runner (label unit) and with make_runner on a Vulkan device (label vulkan,
// VKS_ENGINE_TEST_VULKAN: lavapipe here).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "engine/model/kv_pools.h"
#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/cpu/reference_data.h"
#include "tests/sched/engine_harness.h"
#include "tests/sched/engine_runs.h"
#ifdef VKS_ENGINE_TEST_VULKAN
#include "engine/vulkan/runner/runner_factory.h"
#include "engine/vulkan/runner/runner_warmup.h"
#else
#include "engine/cpu/cpu_runner.h"
#endif

namespace vks::test {
namespace {

constexpr int32_t kBlock = 4;

struct Outcome : EngineOutcome {
  int32_t most_window_used = 0;  // the most window-pool blocks seen in use
};

const KvPoolStats* pool_of(const EngineStats& s, const std::string& kind) {
  for (const KvPoolStats& p : s.kv_pools) {
    if (p.kind == kind) return &p;
  }
  return nullptr;
}

#define SKIP_IF_NO_DEVICE() \
  if (skipped_) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: test skipped")

class WindowEngine : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    model_ = LlamaModel::load(model_path(std::string(GetParam()) + ".gguf"));
    tok_ = Tokenizer::from_gguf(model_->file());
    ref_ = load_ids_file(std::string(GetParam()) + ".greedy.ids");
    ASSERT_EQ(ref_.generated.size(), 32u) << "reference ids not found under " << models_dir();
    ASSERT_GT(window_pool_window(model_->config()), 0u) << "the fixture has window and full layers";
  }

  std::unique_ptr<ModelRunner> make(int32_t num_blocks, int32_t window_blocks) {
#ifdef VKS_ENGINE_TEST_VULKAN
    RunnerOptions o;
    o.allow_cpu_fallback = false;
    o.block_size = kBlock;
    o.num_blocks = num_blocks;
    o.num_window_blocks = window_blocks;
    o.max_step_tokens = 256;
    o.max_step_seqs = 16;
    try {
      std::unique_ptr<ModelRunner> runner = make_runner(*model_, o);
      warm_up_runner(*runner);  // the daemon's throw-away steps carry window tables too
      return runner;
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDevice) return nullptr;  // no Vulkan device: skipped
      throw;
    }
#else
    CpuRunnerOptions o;
    o.block_size = kBlock;
    o.num_blocks = num_blocks;
    o.num_window_blocks = window_blocks;
    o.threads = 2;
    o.max_step_seqs = 16;
    return std::make_unique<CpuRunner>(*model_, o);
#endif
  }

  // Runs the requests on one engine (one after the other when one_by_one). window_blocks: the
  // runner's window pool (-1 sized by the runner, 0 none: the window kept whole in the one pool).
  Outcome run(const std::vector<GenerateRequest>& reqs, EngineConfig cfg, int32_t num_blocks = 256,
              int32_t window_blocks = -1, bool one_by_one = false) {
    Outcome out;
    std::unique_ptr<ModelRunner> runner = make(num_blocks, window_blocks);
    if (!runner) {
      skipped_ = true;
      return out;
    }
    Engine engine(std::move(runner), *tok_, cfg);
    static_cast<EngineOutcome&>(out) = run_to_completion(engine, reqs, one_by_one, [&](const EngineStats& s) {
      if (const KvPoolStats* w = pool_of(s, "window")) out.most_window_used = std::max(out.most_window_used, w->blocks_used);
    });
    return out;
  }

  GenerateRequest target() const { return greedy_request(ref_.prompt, 32); }

  bool skipped_ = false;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
  GreedyReference ref_;
};

TEST_P(WindowEngine, ALongSequenceHoldsOnlyItsWindowInTheWindowPool) {
  // 39 prompt tokens and 300 generated: ~85 full-pool blocks of 4, while a window of W (8; gemma4-e:
  // 16) spans at most ceil((W - 1) / 4) + 1 blocks between steps (one more while a step's chunk
  // crosses a block).
  // The fixtures' sliding_window (../shared/models/README.md), not the loader's reading of it.
  const int32_t w = std::string(GetParam()) == "gemma4-e-tiny" ? 16 : 8;
  GenerateRequest long_one = greedy_request(ref_.prompt, 300);
  const Outcome out = run({long_one}, EngineConfig{}, 256);
  SKIP_IF_NO_DEVICE();
  ASSERT_EQ(out.ids[0].size(), 300u);
  EXPECT_TRUE(std::equal(ref_.generated.begin(), ref_.generated.end(), out.ids[0].begin()));
  EXPECT_GE(out.most_window_used, 2);
  EXPECT_LE(out.most_window_used, (w - 1 + kBlock - 1) / kBlock + 2);
  const KvPoolStats* full = pool_of(out.stats, "full");
  const KvPoolStats* window = pool_of(out.stats, "window");
  ASSERT_NE(full, nullptr);
  ASSERT_NE(window, nullptr);
  // The engine's own peak, not one sampled between polls (a loaded machine runs several steps
  // between two: 79 of the 85 blocks were once seen under ctest -j2).
  EXPECT_GE(full->blocks_used_peak, 80);
  EXPECT_EQ(full->blocks_used, 0);
  EXPECT_EQ(window->blocks_used, 0);
  // Their sizes: every layer's K and V rows per position, split by kind.
  const LlamaConfig& c = model_->config();
  const int64_t row_pair = out.stats.kv_bytes_per_token / static_cast<int64_t>(c.n_attention_layers());
  EXPECT_EQ(full->layers + window->layers, static_cast<int32_t>(c.n_attention_layers()));
  EXPECT_EQ(full->layers, static_cast<int32_t>(n_full_pool_layers(c)));
  EXPECT_EQ(window->window, w);
  EXPECT_EQ(full->bytes_per_block, kBlock * row_pair * full->layers);
  EXPECT_EQ(window->bytes_per_block, kBlock * row_pair * window->layers);
  EXPECT_EQ(out.stats.kv_bytes_per_token * kBlock, full->bytes_per_block + window->bytes_per_block);

  // The one-pool runner keeps the window whole: one "full" pool holding every layer.
  const Outcome whole = run({greedy_request(ref_.prompt, 60)}, EngineConfig{}, 256, 0);
  ASSERT_EQ(whole.stats.kv_pools.size(), 1u);
  EXPECT_EQ(whole.stats.kv_pools[0].kind, "full");
  EXPECT_EQ(whole.stats.kv_pools[0].layers, static_cast<int32_t>(c.n_attention_layers()));
  EXPECT_TRUE(std::equal(whole.ids[0].begin(), whole.ids[0].end(), out.ids[0].begin())) << "the same ids";
}

TEST_P(WindowEngine, GreedyIdsEqualLlamaCppUnderEverySchedule) {
  const Outcome alone = run({target()}, EngineConfig{});
  SKIP_IF_NO_DEVICE();
  EXPECT_EQ(alone.ids[0], ref_.generated) << "alone";

  const std::vector<GenerateRequest> batch = with_companions(target());
  const Outcome batched = run(batch, EngineConfig{});
  EXPECT_EQ(batched.ids[kTargetInBatch], ref_.generated) << "batched with six others";
  const Outcome whole = run(batch, EngineConfig{}, 256, 0);
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(batched.ids[i], whole.ids[i]) << "one pool, request " << i;

  EngineConfig chunked;
  chunked.max_batched_tokens = 5;  // the 39-token prompt in 8 chunks
  chunked.max_seqs = 2;
  EXPECT_EQ(run({target()}, chunked).ids[0], ref_.generated) << "chunked";
  EXPECT_EQ(run(batch, chunked).ids[kTargetInBatch], ref_.generated) << "chunked and batched";

  // 10 window blocks for 7 sequences (each needs 2-3, and 10 for the 39-token prompt read at once):
  // preemptions for want of window blocks, each recomputed.
  const Outcome short_window = run(batch, EngineConfig{}, 256, 10);
  EXPECT_GT(short_window.stats.preemptions, 0);
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(short_window.ids[i], batched.ids[i]) << "request " << i;
  // 24 full blocks of 4 = 96 tokens for requests of up to 71: preemptions for want of full blocks.
  const Outcome short_full = run(batch, EngineConfig{}, 24);
  EXPECT_GT(short_full.stats.preemptions, 0);
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(short_full.ids[i], batched.ids[i]) << "request " << i;
}

TEST_P(WindowEngine, AContinuedConversationHitsTheCacheAsTheOnePoolDoes) {
  // A chat of four turns, each the previous turn's prompt and answer and 9 more tokens: every turn
  // reuses the previous one's computed blocks, as deep as a runner keeping the window whole would.
  std::vector<GenerateRequest> turns;
  std::vector<int32_t> prompt = ref_.prompt;
  const std::vector<std::vector<int32_t>> answers = [&] {
    std::vector<std::vector<int32_t>> a;
    std::vector<int32_t> p = ref_.prompt;
    for (int t = 0; t < 4; ++t) {
      const Outcome fresh = run({greedy_request(p, 16)}, [] {
        EngineConfig c;
        c.prefix_caching = false;
        return c;
      }());
      a.push_back(fresh.ids[0]);
      p.insert(p.end(), fresh.ids[0].begin(), fresh.ids[0].end());
      p.insert(p.end(), ref_.prompt.begin() + 1 + t, ref_.prompt.begin() + 10 + t);
    }
    return a;
  }();
  SKIP_IF_NO_DEVICE();
  for (int t = 0; t < 4; ++t) {
    turns.push_back(greedy_request(prompt, 16));
    prompt.insert(prompt.end(), answers[static_cast<size_t>(t)].begin(), answers[static_cast<size_t>(t)].end());
    prompt.insert(prompt.end(), ref_.prompt.begin() + 1 + t, ref_.prompt.begin() + 10 + t);
  }
  const Outcome window = run(turns, EngineConfig{}, 256, -1, true);
  const Outcome whole = run(turns, EngineConfig{}, 256, 0, true);
  int64_t cached = 0, prompts = 0;
  for (size_t t = 0; t < turns.size(); ++t) {
    EXPECT_EQ(window.ids[t], answers[t]) << "turn " << t << " from the cache gives the uncached tokens";
    EXPECT_EQ(window.usage[t].cached_tokens, whole.usage[t].cached_tokens) << "turn " << t;
    cached += window.usage[t].cached_tokens;
    prompts += static_cast<int64_t>(turns[t].prompt_ids.size());
  }
  // Turn t > 0 reuses what turn t-1 computed up to its last full block: nearly all of its prompt.
  EXPECT_GT(window.usage[3].cached_tokens, 100);
  EXPECT_EQ(window.stats.prefix_hit_tokens, cached);
  std::printf("[ chat ] %s: %lld of %lld prompt tokens from the prefix cache (%.1f%%)\n", GetParam(),
              static_cast<long long>(cached), static_cast<long long>(prompts), 100.0 * cached / prompts);
}

std::string fixture_name(const ::testing::TestParamInfo<const char*>& param) {
  return test::test_name_of(param.param);
}

#ifdef VKS_ENGINE_TEST_VULKAN
// lavapipe takes ~15 s a fixture: gemma3-tiny (five window layers of six) stands for the four.
INSTANTIATE_TEST_SUITE_P(Fixtures, WindowEngine, ::testing::Values("gemma3-tiny"), fixture_name);
#else
INSTANTIATE_TEST_SUITE_P(Fixtures, WindowEngine, ::testing::Values("gemma3-tiny", "gemma2-tiny", "gpt-oss-tiny", "gemma4-e-tiny"),
                         fixture_name);
#endif

}  // namespace
}  // namespace vks::test
