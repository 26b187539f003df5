// Replayed decode steps (engine/vulkan/runner/step_replay.h): which steps have a key, the
// recordings' least-recently-used order, and a runner that replays giving the bits of one that
// records every step.
#include <gtest/gtest.h>

#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/step_replay.h"
#include "engine/vulkan/runner/vulkan_runner.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/vulkan/runner_test_util.h"

namespace vks {
namespace {

StepLimits replay_limits() { return StepLimits{512, 4, 300, 32, 4, 100}; }

// One token for each of `positions`' sequences, at that position, asking `modes`' logits.
StepBatch decode_step(const std::vector<int32_t>& positions, const std::vector<LogitsMode>& modes) {
  StepBatch b;
  for (size_t s = 0; s < positions.size(); ++s) {
    SeqChunk c;
    c.token_offset = static_cast<int32_t>(s);
    c.n_tokens = 1;
    c.n_past = positions[s];
    for (int32_t block = 0; block * 4 <= positions[s]; ++block) {
      c.block_table.push_back(static_cast<int32_t>(s) * 90 + block);  // 90 blocks a sequence, apart
    }
    c.logits = modes[s];
    b.tokens.push_back(5);
    b.seqs.push_back(c);
  }
  b.finalize(4);
  return b;
}

std::optional<vk::ReplayKey> key_of(const StepBatch& b, uint32_t split_keys = 128) {
  StepInputs in;
  pack_step_inputs(b, replay_limits(), in);
  return vk::replay_key(b, in, split_keys);
}

TEST(StepReplayKey, ADecodeStepsKeyIsItsTokensSplitsAndReadBacks) {
  const auto argmax = LogitsMode::kArgmax;
  // Keys 10, 301 and 129: the furthest needs ceil(301 / 128) = 3 splits.
  const auto key = key_of(decode_step({9, 300, 128}, {argmax, argmax, argmax}));
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(*key, (vk::ReplayKey{3, 3, false}));
  EXPECT_EQ(*key_of(decode_step({127}, {argmax})), (vk::ReplayKey{1, 1, false}));
  EXPECT_EQ(*key_of(decode_step({128}, {argmax})), (vk::ReplayKey{1, 2, false}));
  EXPECT_EQ(*key_of(decode_step({9, 300}, {argmax, LogitsMode::kFull})), (vk::ReplayKey{2, 3, true}));
  // The runner's split size counts them: 301 keys are 5 splits of 64, 2 of 256, 1 of 512.
  EXPECT_EQ(*key_of(decode_step({300}, {argmax}), 64), (vk::ReplayKey{1, 5, false}));
  EXPECT_EQ(*key_of(decode_step({300}, {argmax}), 256), (vk::ReplayKey{1, 2, false}));
  EXPECT_EQ(*key_of(decode_step({300}, {argmax}), 512), (vk::ReplayKey{1, 1, false}));
}

TEST(StepReplayKey, OtherStepsHaveNone) {
  const auto argmax = LogitsMode::kArgmax;
  // A sequence without logits, one wanting its hidden state: their rows differ from the decode's.
  EXPECT_FALSE(key_of(decode_step({9, 20}, {argmax, LogitsMode::kNone})).has_value());
  EXPECT_FALSE(key_of(decode_step({9, 20}, {LogitsMode::kHidden, argmax})).has_value());
  // A prefill chunk beside a decode token.
  StepBatch b = decode_step({9, 20}, {argmax, argmax});
  b.tokens.insert(b.tokens.begin(), {7, 8});
  b.seqs[0].n_tokens = 3;
  b.seqs[1].token_offset = 3;
  b.finalize(4);
  EXPECT_FALSE(key_of(b).has_value());
}

class StepReplayCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    vk::DeviceOptions options;
    options.disk_pipeline_cache = false;
    device_ = std::make_unique<vk::Device>(vk::Device::create(options));
  }
  std::unique_ptr<vk::Device> device_;
};

TEST_F(StepReplayCache, KeepsTheRecordingsOfTheKeysUsedLast) {
  vk::StepReplays replays(*device_, 2);
  const vk::ReplayKey a{1, 1, false}, b{2, 1, false}, c{1, 2, false};
  EXPECT_FALSE(replays.find_or_make(a).recorded);
  replays.find_or_make(a).recorded = true;
  replays.find_or_make(b).recorded = true;
  EXPECT_TRUE(replays.find_or_make(a).recorded);  // a is now the later used
  EXPECT_FALSE(replays.find_or_make(c).recorded);  // takes b's place
  EXPECT_EQ(replays.size(), 2u);
  EXPECT_TRUE(replays.find_or_make(a).recorded);
  EXPECT_FALSE(replays.find_or_make(b).recorded);  // recorded again, in c's place
  EXPECT_EQ(replays.size(), 2u);
}

class RunnerReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    if (vk::list_devices().empty()) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    model_ = LlamaModel::load(test::model_path("stories260K.gguf"));
  }
  std::unique_ptr<VulkanRunner> make_runner(bool replay, const std::string& split_keys = "") const {
    RunnerOptions o;
    o.attention_split_keys = split_keys;
    o.num_blocks = 512;
    o.max_step_tokens = 512;
    o.max_step_seqs = 4;
    o.replay_decode_steps = replay;
    return std::make_unique<VulkanRunner>(*model_, o);
  }
  std::unique_ptr<LlamaModel> model_;
};

TEST_F(RunnerReplay, ReplayedDecodeStepsGiveTheBitsOfFreshRecordings) {
  const auto replaying = make_runner(true);
  const auto recording = make_runner(false);
  const uint32_t vocab = model_->config().vocab_size;
  // Generating 12 tokens, the 120- and 250-token prompts cross 128 and 256 keys: the lanes
  // family's attention runs 1, 2 and 3 splits.
  const std::vector<std::vector<int32_t>> prompts{test::random_prompt(120, 31, vocab),
                                                  test::random_prompt(250, 32, vocab)};
  test::GenerateOptions o;
  o.n_gen = 12;
  o.full_logits = true;
  test::GreedyDriver replaying_driver(*replaying, 3), recording_driver(*recording, 3);
  const auto replayed = replaying_driver.run(prompts, o);
  test::expect_same_results(replayed, recording_driver.run(prompts, o));
  EXPECT_NE(replayed[0].generated, replayed[1].generated);
  // 11 decode steps of 2 tokens, two keys: 2 splits, then 3 past 256 keys.
  EXPECT_EQ(replaying->replay_recordings(), 2u);
  EXPECT_TRUE(replaying->last_step_replayed());
  EXPECT_EQ(recording->replay_recordings(), 0u);
  EXPECT_FALSE(recording->last_step_replayed());
}

// A runner told another attention split size takes it and keys its recordings by it: decode steps
// at 251 to 257 keys are 2, then 3 splits of 128 (two recordings) but one split of 512 (one
// recording); the replaying runner gives the bits of a recording one of the same split size. An
// odd size is refused.
TEST_F(RunnerReplay, TheRunnersSplitSizeKeysItsRecordings) {
  const auto replaying = make_runner(true, "512");
  const auto recording = make_runner(false, "512");
  EXPECT_EQ(replaying->attention_split_keys(), 512u);
  EXPECT_EQ(make_runner(true)->attention_split_keys(), uint32_t{VKS_ATTN_SPLIT_KEYS});
  const std::vector<std::vector<int32_t>> prompts{test::random_prompt(250, 33, model_->config().vocab_size)};
  test::GenerateOptions o;
  o.n_gen = 8;  // decode steps at 251..257 keys: 2 and 3 splits of 128, 1 of 512
  o.full_logits = true;
  test::GreedyDriver replaying_driver(*replaying, 3), recording_driver(*recording, 3);
  test::expect_same_results(replaying_driver.run(prompts, o), recording_driver.run(prompts, o));
  EXPECT_EQ(replaying->replay_recordings(), 1u);
  EXPECT_THROW(make_runner(true, "100"), Error);
}

}  // namespace
}  // namespace vks
