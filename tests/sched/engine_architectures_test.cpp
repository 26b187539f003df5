// The engine on the CPU runner with the architectures whose layers differ by kind (windows, KV
// shared between layers, per-layer inputs, a dense MLP beside experts, sinks and MXFP4 experts):
// a greedy request gives llama.cpp's 32 ids alone, batched among sampled and greedy companions,
// with its prompt chunked, after forced preemptions, from the prefix cache (the same prompt
// again), and when it speculates by prompt lookup.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/cpu/cpu_runner.h"
#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "tests/common/test_models.h"
#include "tests/cpu/reference_data.h"
#include "tests/sched/engine_harness.h"
#include "tests/sched/engine_runs.h"

namespace vks::test {
namespace {

class ArchitectureEngine : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    model_ = LlamaModel::load(model_path(GetParam() + ".gguf"));
    tok_ = Tokenizer::from_gguf(model_->file());
    ref_ = load_ids_file(GetParam() + ".greedy.ids");
    ASSERT_EQ(ref_.generated.size(), 32u) << "reference ids not found under " << models_dir();
  }

  EngineOutcome run(const std::vector<GenerateRequest>& reqs, EngineConfig cfg, int32_t num_blocks = 256,
                    bool one_by_one = false) {
    CpuRunnerOptions o;
    o.block_size = 4;
    o.num_blocks = num_blocks;
    o.threads = 2;
    Engine engine(std::make_unique<CpuRunner>(*model_, o), *tok_, cfg);
    return run_to_completion(engine, reqs, one_by_one);
  }

  GenerateRequest target() const { return greedy_request(ref_.prompt, 32); }

  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
  GreedyReference ref_;
};

TEST_P(ArchitectureEngine, GreedyIdsEqualLlamaCppUnderEverySchedule) {
  EXPECT_EQ(run({target()}, EngineConfig{}).ids[0], ref_.generated) << "alone";

  const std::vector<GenerateRequest> batch = with_companions(target());
  const EngineOutcome batched = run(batch, EngineConfig{});
  EXPECT_EQ(batched.ids[kTargetInBatch], ref_.generated) << "batched with six others";

  EngineConfig chunked;
  chunked.max_batched_tokens = 5;  // the 39-token prompt in 8 chunks
  EXPECT_EQ(run(batch, chunked).ids[kTargetInBatch], ref_.generated) << "chunked and batched";

  // 24 blocks of 4 = 96 tokens for requests of up to 71: forced preemptions, each recomputed.
  const EngineOutcome preempted = run(batch, EngineConfig{}, 24);
  EXPECT_GT(preempted.stats.preemptions, 0);
  EXPECT_EQ(preempted.ids[kTargetInBatch], ref_.generated) << "after preemption";
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(preempted.ids[i], batched.ids[i]) << "request " << i;

  // The same prompt again reads its full blocks from the prefix cache; then with prompt lookup,
  // every draft found verified (no cost model), so the drafts' verification steps are exercised.
  GenerateRequest speculative = target();
  speculative.speculative = 4;
  EngineConfig verify_every_draft;
  verify_every_draft.speculative_cost_model = false;
  const EngineOutcome again = run({target(), target(), speculative}, verify_every_draft, 256, true);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(again.ids[i], ref_.generated) << "request " << i;
  EXPECT_EQ(again.usage[1].cached_tokens, 36) << "the prompt's full blocks of 4";
  EXPECT_GT(again.stats.draft_tokens, 0) << "no draft was verified";
}

std::string fixture_name(const ::testing::TestParamInfo<std::string>& info) {
  return test::test_name_of(info.param);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ArchitectureEngine,
                         ::testing::Values("gemma3-tiny", "gpt-oss-tiny", "gemma4-moe-tiny", "gemma4-e-tiny"),
                         fixture_name);

}  // namespace
}  // namespace vks::test
