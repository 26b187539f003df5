// CpuRunner on the Qwen3.5 fixtures (Gated DeltaNet layers with a recurrent state per sequence
// beside gated attention): greedy ids equal llama.cpp's, and a sequence's ids and logits are the
// same bits alone, batched with others, with its prompt chunked, and recomputed after a preemption
// in a state slot another sequence used before; bad state slots are refused; the float oracle
// restarts at position 0 but never rewinds.
#include <gtest/gtest.h>

#include <string>

#include "engine/common/error.h"
#include "engine/cpu/cpu_model.h"
#include "engine/cpu/cpu_runner.h"
#include "engine/model/llama_model.h"
#include "tests/common/test_models.h"
#include "tests/cpu/cpu_runner_driver.h"
#include "tests/cpu/reference_data.h"

namespace vks {
namespace {

using test::Driver;
using test::Seq;

class HybridRunner : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    model_ = LlamaModel::load(test::model_path(GetParam() + ".gguf"));
    ref_ = test::load_ids_file(GetParam() + ".greedy.ids");
    ASSERT_EQ(ref_.generated.size(), 32u) << "reference ids not found under " << test::models_dir();
  }
  CpuRunnerOptions options() const {
    CpuRunnerOptions o;
    o.block_size = 4;
    o.num_blocks = 128;
    o.threads = 2;
    o.state_slots = 4;
    return o;
  }
  Seq target(int32_t slot) const {
    Seq s;
    s.tokens = ref_.prompt;
    s.state_slot = slot;
    return s;
  }
  // Steps `seqs` together, each taking up to `chunk` of its uncomputed tokens per step, until each
  // holds `total` tokens.
  static void run_together(Driver& d, const std::vector<Seq*>& seqs, size_t total, int32_t chunk) {
    while (true) {
      bool any = false;
      for (Seq* s : seqs) {
        if (s->tokens.size() >= total) continue;
        d.add(*s, std::min<int32_t>(chunk, static_cast<int32_t>(s->tokens.size()) - s->n_cached));
        any = true;
      }
      if (!any) return;
      d.run();
    }
  }
  size_t total() const { return ref_.prompt.size() + ref_.generated.size(); }
  std::vector<int32_t> expected() const {
    std::vector<int32_t> e = ref_.prompt;
    e.insert(e.end(), ref_.generated.begin(), ref_.generated.end());
    return e;
  }
  std::unique_ptr<LlamaModel> model_;
  test::GreedyReference ref_;
};

TEST_P(HybridRunner, GreedyIdsMatchLlamaCppAloneBatchedChunkedAndPreempted) {
  CpuRunner runner(*model_, options());
  ASSERT_EQ(runner.recurrent_state_slots(), 4);
  Driver d(runner);
  Seq alone = target(0);
  run_together(d, {&alone}, total(), 1 << 20);
  EXPECT_EQ(alone.tokens, expected());

  // Batched with two other sequences (other prompts, other slots), prompts chunked by 5 and by 7:
  // the same logits, bit for bit. Slot 0 still holds `alone`'s state: starting at 0 resets it.
  Seq batched = target(0), other1, other2;
  other1.tokens = {1, 400, 300, 200, 100, 50, 25};
  other1.state_slot = 1;
  other2.tokens.assign(ref_.prompt.rbegin(), ref_.prompt.rend());
  other2.state_slot = 3;
  run_together(d, {&other1, &batched, &other2}, total(), 5);
  EXPECT_EQ(batched.tokens, alone.tokens);
  EXPECT_EQ(batched.logits, alone.logits);
  Seq chunked = target(2);
  run_together(d, {&chunked}, total(), 7);
  EXPECT_EQ(chunked.logits, alone.logits);

  // Preempted after 10 generated tokens: its blocks and slot are dropped, another sequence runs in
  // that slot, then it is recomputed from position 0 (prompt + generated) in it and continues.
  Seq preempted = target(1);
  run_together(d, {&preempted}, ref_.prompt.size() + 10, 1 << 20);
  Seq intruder;
  intruder.tokens = {1, 7, 8, 9};
  intruder.state_slot = 1;
  run_together(d, {&intruder}, 12, 1 << 20);
  Seq resumed;
  resumed.tokens = preempted.tokens;
  resumed.state_slot = 1;
  resumed.logits = preempted.logits;
  run_together(d, {&resumed}, total(), 16);
  EXPECT_EQ(resumed.tokens, expected());
  EXPECT_EQ(resumed.logits.back(), alone.logits.back());
}

TEST_P(HybridRunner, RefusesBadStateSlots) {
  CpuRunner runner(*model_, options());
  auto step_with = [&](std::vector<int32_t> slots) {
    StepBatch batch;
    for (size_t i = 0; i < slots.size(); ++i) {
      SeqChunk c;
      c.token_offset = static_cast<int32_t>(i);
      c.n_tokens = 1;
      c.block_table = {static_cast<int32_t>(i)};
      c.logits = LogitsMode::kArgmax;
      c.state_slot = slots[i];
      batch.tokens.push_back(1);
      batch.seqs.push_back(c);
    }
    batch.finalize(runner.block_size());
    StepResult out;
    try {
      runner.step(batch, out);
      return std::string("accepted");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
  };
  EXPECT_NE(step_with({-1}).find("state slot -1 outside [0, 4)"), std::string::npos);
  EXPECT_NE(step_with({4}).find("state slot 4 outside [0, 4)"), std::string::npos);
  EXPECT_NE(step_with({2, 2}).find("two sequences share state slot 2"), std::string::npos);
  EXPECT_EQ(step_with({0, 3}), "accepted");
}

// The float oracle keeps one state: it continues at the next position or restarts at 0 (the same
// logits again), and refuses to rewind.
TEST_P(HybridRunner, CpuModelRestartsButNeverRewinds) {
  CpuModel cpu(*model_, 2, 16);
  std::vector<std::vector<float>> first;
  for (int32_t pos = 0; pos < 4; ++pos) first.push_back(cpu.forward(ref_.prompt[static_cast<size_t>(pos)], pos));
  try {
    cpu.forward(ref_.prompt[2], 2);
    ADD_FAILURE() << "rewound to position 2";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("would rewind a recurrent state"), std::string::npos) << e.what();
  }
  for (int32_t pos = 0; pos < 4; ++pos) {
    EXPECT_EQ(cpu.forward(ref_.prompt[static_cast<size_t>(pos)], pos), first[static_cast<size_t>(pos)]) << pos;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HybridRunner, ::testing::Values("qwen35-tiny", "qwen35moe-tiny"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param == "qwen35-tiny" ? std::string("qwen35") : std::string("qwen35moe");
                         });

}  // namespace
}  // namespace vks
