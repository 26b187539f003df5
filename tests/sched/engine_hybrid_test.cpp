// The engine on qwen35-tiny (Gated DeltaNet layers: a recurrent state slot per live sequence), on the
// CPU runner and (VKS_ENGINE_TEST_VULKAN) on the Vulkan runner's device states: the greedy request gives llama.cpp's 32 ids alone, among more concurrent requests
// than there are state slots (admission waits for a slot), with its prompt chunked, after forced
// preemptions (recomputed from its tokens, or resumed from a state checkpoint), twice in a row with
// the same prompt (the second resumes from the checkpoint at the prompt's last block boundary) and
// when it asks for speculative decoding (drafts are off: a state cannot roll back). A conversation
// continued resumes from the checkpoint its first turn left at its last block boundary, and gives
// the tokens of a run with no cache; without checkpoint slots nothing is reused.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "tests/common/test_models.h"
#include "tests/cpu/reference_data.h"
#include "tests/sched/engine_harness.h"
#include "tests/sched/engine_runs.h"
#ifdef VKS_ENGINE_TEST_VULKAN
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/runner_factory.h"
#include "engine/vulkan/runner/runner_warmup.h"
#include "tests/common/vulkan_skip.h"
#else
#include "engine/cpu/cpu_runner.h"
#endif

namespace vks::test {
namespace {

constexpr int32_t kStateSlots = 3;

class HybridEngine : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef VKS_ENGINE_TEST_VULKAN
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
#endif
    model_ = LlamaModel::load(model_path("qwen35-tiny.gguf"));
    tok_ = Tokenizer::from_gguf(model_->file());
    ref_ = load_ids_file("qwen35-tiny.greedy.ids");
    ASSERT_EQ(ref_.generated.size(), 32u) << "reference ids not found under " << models_dir();
  }

  // Runs the requests on one engine (one after the other when one_by_one).
  EngineOutcome run(const std::vector<GenerateRequest>& reqs, EngineConfig cfg, int32_t num_blocks = 256,
              bool one_by_one = false) {
    Engine engine(make(num_blocks), *tok_, cfg);
    return run_to_completion(engine, reqs, one_by_one);
  }

  std::unique_ptr<ModelRunner> make(int32_t num_blocks) {
#ifdef VKS_ENGINE_TEST_VULKAN
    RunnerOptions o;
    o.allow_cpu_fallback = false;
    o.block_size = 4;
    o.num_blocks = num_blocks;
    o.max_step_tokens = 256;
    o.max_step_seqs = kStateSlots;  // a state slot for each sequence a step may hold
    o.state_checkpoints = checkpoints_;
    std::unique_ptr<ModelRunner> runner = make_runner(*model_, o);
    warm_up_runner(*runner);  // the daemon's throw-away steps run in state slots too
    return runner;
#else
    CpuRunnerOptions o;
    o.block_size = 4;
    o.num_blocks = num_blocks;
    o.threads = 2;
    o.state_slots = kStateSlots;
    o.state_checkpoints = checkpoints_;
    return std::make_unique<CpuRunner>(*model_, o);
#endif
  }

  GenerateRequest target() const { return greedy_request(ref_.prompt, 32); }

  int32_t checkpoints_ = 16;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
  GreedyReference ref_;
};

TEST_F(HybridEngine, GreedyIdsEqualLlamaCppUnderEverySchedule) {
  EXPECT_EQ(run({target()}, EngineConfig{}).ids[0], ref_.generated) << "alone";

  // Six companions (greedy and sampled, other prompts) and the target: more than the 3 slots.
  const std::vector<GenerateRequest> batch = with_companions(target());
  const EngineOutcome batched = run(batch, EngineConfig{});
  EXPECT_EQ(batched.ids[kTargetInBatch], ref_.generated) << "batched with six others";
  EXPECT_EQ(batched.most_running, kStateSlots) << "running sequences are bounded by the state slots";

  EngineConfig chunked;
  chunked.max_batched_tokens = 5;  // the 39-token prompt in 8 chunks
  chunked.max_seqs = 2;
  EXPECT_EQ(run({target()}, chunked).ids[0], ref_.generated) << "chunked";
  EXPECT_EQ(run(batch, chunked).ids[kTargetInBatch], ref_.generated) << "chunked and batched";

  // 24 blocks of 4 = 96 tokens for requests of up to 71: forced preemptions, each recomputed.
  const EngineOutcome preempted = run(batch, EngineConfig{}, 24);
  EXPECT_GT(preempted.stats.preemptions, 0);
  EXPECT_EQ(preempted.ids[kTargetInBatch], ref_.generated) << "after preemption";
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(preempted.ids[i], batched.ids[i]) << "request " << i;
}

TEST_F(HybridEngine, ItsStateSlotsAreCountedInItsMemory) {
  // One sequence's state: per DeltaNet layer the conv's last conv_kernel - 1 inputs of its q, k and
  // v channels and a head_dim x head_dim matrix per value head, f32.
  uint64_t per_slot = 0;
  for (const LayerSpec& l : model_->config().layers) {
    if (l.mixer != Mixer::kDeltaNet) continue;
    const DeltaNetSpec& d = l.deltanet;
    const uint64_t channels = 2ull * d.n_groups * d.head_dim + uint64_t{d.n_v_heads} * d.head_dim;
    per_slot += 4 * ((d.conv_kernel - 1) * channels + uint64_t{d.n_v_heads} * d.head_dim * d.head_dim);
  }
  ASSERT_GT(per_slot, 0u);
  Engine engine(make(64), *tok_, EngineConfig{});
  EXPECT_EQ(engine.recurrent_state_bytes(), (kStateSlots + uint64_t(checkpoints_)) * per_slot)
      << "live and checkpoint slots, every DeltaNet layer";
}

// Blocks of 4: the 39-token prompt's last block boundary is 36.
constexpr int32_t kPromptBoundary = 36;

TEST_F(HybridEngine, SamePromptTwiceResumesFromTheCheckpointAndSpeculationIsOff) {
  GenerateRequest speculative = target();
  speculative.speculative = 4;
  const EngineOutcome twice = run({target(), target(), speculative}, EngineConfig{}, 256, true);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(twice.ids[i], ref_.generated) << "request " << i;
    EXPECT_EQ(twice.usage[i].cached_tokens, i == 0 ? 0 : kPromptBoundary) << "request " << i;
  }
  EXPECT_EQ(twice.stats.draft_tokens, 0);

  checkpoints_ = 0;  // a runner keeping no states: every prompt is recomputed
  const EngineOutcome none = run({target(), target()}, EngineConfig{}, 256, true);
  EXPECT_EQ(none.ids[1], ref_.generated);
  EXPECT_EQ(none.usage[1].cached_tokens, 0);
}

TEST_F(HybridEngine, AContinuedConversationResumesFromItsLastBoundary) {
  // Turn 2's prompt: turn 1's prompt, its 32 answer tokens, then 9 more.
  std::vector<int32_t> turn2 = ref_.prompt;
  turn2.insert(turn2.end(), ref_.generated.begin(), ref_.generated.end());
  turn2.insert(turn2.end(), ref_.prompt.begin() + 1, ref_.prompt.begin() + 10);
  const EngineOutcome cached = run({target(), greedy_request(turn2, 16)}, EngineConfig{}, 256, true);
  EXPECT_EQ(cached.ids[0], ref_.generated);
  // Turn 1 computed 39 + 31 tokens (its last is never fed): its last decode checkpoint is at 68.
  const auto computed = static_cast<int32_t>(ref_.prompt.size() + ref_.generated.size() - 1);
  EXPECT_EQ(cached.usage[1].cached_tokens, computed / 4 * 4);

  EngineConfig no_cache;
  no_cache.prefix_caching = false;
  const EngineOutcome fresh = run({greedy_request(turn2, 16)}, no_cache);
  EXPECT_EQ(fresh.usage[0].cached_tokens, 0);
  EXPECT_EQ(cached.ids[1], fresh.ids[0]) << "resumed from a checkpoint, turn 2 must give the uncached tokens";
}

}  // namespace
}  // namespace vks::test
