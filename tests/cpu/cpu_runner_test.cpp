// CpuRunner: greedy ids equal the reference, and a sequence's tokens and logits do not depend on
// what else is in the batch or on how its prompt is chunked.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "engine/common/error.h"
#include "engine/cpu/cpu_model.h"
#include "engine/cpu/cpu_runner.h"
#include "engine/cpu/reference_ops.h"
#include "engine/model/llama_model.h"
#include "tests/common/test_models.h"
#include "tests/cpu/cpu_runner_driver.h"
#include "tests/cpu/reference_data.h"

namespace vks {
namespace {

using test::Driver;
using test::Seq;

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = LlamaModel::load(test::model_path("stories260K.gguf"));
    ref_ = test::load_greedy_reference();
    ASSERT_EQ(ref_.generated.size(), 60u) << "reference ids not found under " << test::models_dir();
  }
  CpuRunnerOptions options() const {
    CpuRunnerOptions o;
    o.num_blocks = 64;
    o.threads = 2;
    return o;
  }
  // Generates until the sequence holds `total` tokens, alone, prompt in one piece.
  void generate_alone(Driver& d, Seq& seq, size_t total) {
    while (seq.tokens.size() < total) {
      d.add(seq, static_cast<int32_t>(seq.tokens.size()) - seq.n_cached);
      d.run();
    }
  }
  std::unique_ptr<LlamaModel> model_;
  test::GreedyReference ref_;
};

TEST_F(RunnerTest, GreedyIdsMatchReference) {
  CpuRunner runner(*model_, options());
  Driver d(runner);
  Seq seq;
  seq.tokens = ref_.prompt;
  generate_alone(d, seq, ref_.prompt.size() + ref_.generated.size());
  std::vector<int32_t> expected = ref_.prompt;
  expected.insert(expected.end(), ref_.generated.begin(), ref_.generated.end());
  EXPECT_EQ(seq.tokens, expected);
}

TEST_F(RunnerTest, EightSequencesBatchedEqualAlone) {
  const std::vector<size_t> prompt_lengths = {1, 2, 5, 9, 13, 17, 24, 33};
  const size_t n_generate = 12;
  std::vector<int32_t> source = ref_.prompt;
  source.insert(source.end(), ref_.generated.begin(), ref_.generated.end());

  std::vector<Seq> alone(prompt_lengths.size());
  for (size_t i = 0; i < alone.size(); ++i) {
    CpuRunner runner(*model_, options());
    Driver d(runner);
    alone[i].tokens.assign(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(prompt_lengths[i]));
    generate_alone(d, alone[i], prompt_lengths[i] + n_generate);
  }

  // Together: sequence i joins at step i, so prefills mix with the others' decodes.
  CpuRunner runner(*model_, options());
  Driver d(runner);
  std::vector<Seq> batched(prompt_lengths.size());
  for (size_t step = 0;; ++step) {
    bool any = false;
    for (size_t i = 0; i < batched.size() && i <= step; ++i) {
      Seq& seq = batched[i];
      if (i == step) seq.tokens.assign(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(prompt_lengths[i]));
      if (seq.tokens.size() >= prompt_lengths[i] + n_generate) continue;
      d.add(seq, static_cast<int32_t>(seq.tokens.size()) - seq.n_cached);
      any = true;
    }
    if (!any) break;
    d.run();
  }
  for (size_t i = 0; i < alone.size(); ++i) {
    EXPECT_EQ(batched[i].tokens, alone[i].tokens) << "sequence " << i;
    ASSERT_EQ(batched[i].logits.size(), alone[i].logits.size());
    for (size_t k = 0; k < alone[i].logits.size(); ++k) {
      EXPECT_EQ(batched[i].logits[k], alone[i].logits[k]) << "sequence " << i << " output " << k << " differs";
    }
  }
}

TEST_F(RunnerTest, ChunkedPrefillGivesIdenticalLogits) {
  std::vector<int32_t> prompt = ref_.prompt;
  prompt.insert(prompt.end(), ref_.generated.begin(), ref_.generated.begin() + 35);  // 40 tokens

  CpuRunner whole_runner(*model_, options());
  Driver whole_driver(whole_runner);
  Seq whole;
  whole.tokens = prompt;
  generate_alone(whole_driver, whole, prompt.size() + 10);

  CpuRunner chunked_runner(*model_, options());
  Seq chunked;
  chunked.tokens = prompt;
  Driver d(chunked_runner);
  while (chunked.n_cached < static_cast<int32_t>(prompt.size())) {
    d.add(chunked, std::min<int32_t>(7, static_cast<int32_t>(prompt.size()) - chunked.n_cached));
    d.run();
  }
  generate_alone(d, chunked, prompt.size() + 10);

  EXPECT_EQ(chunked.tokens, whole.tokens);
  ASSERT_EQ(chunked.logits.size(), whole.logits.size());
  for (size_t k = 0; k < whole.logits.size(); ++k) EXPECT_EQ(chunked.logits[k], whole.logits[k]) << "output " << k;
}

// Cores shared with another model (ComputeShare): the prefill steps run while that model's urgent
// step holds the share (their workers give way, the calling thread does every row) and the decode
// steps mark themselves urgent; the logits are bit for bit those of a runner with its cores alone.
TEST_F(RunnerTest, SharedCoresGiveIdenticalLogits) {
  std::vector<int32_t> prompt = ref_.prompt;
  prompt.insert(prompt.end(), ref_.generated.begin(), ref_.generated.begin() + 35);
  CpuRunner alone_runner(*model_, options());
  Driver alone_driver(alone_runner);
  Seq alone;
  alone.tokens = prompt;
  generate_alone(alone_driver, alone, prompt.size() + 10);

  CpuRunnerOptions shared_options = options();
  shared_options.compute_share = std::make_shared<ComputeShare>();
  CpuRunner shared_runner(*model_, shared_options);
  Driver d(shared_runner);
  Seq shared;
  shared.tokens = prompt;
  {
    ComputeShare::Urgent other_model(*shared_options.compute_share);
    d.add(shared, static_cast<int32_t>(prompt.size()));
    d.run();
  }
  EXPECT_EQ(shared_options.compute_share->urgent_steps().load(), 0);
  generate_alone(d, shared, prompt.size() + 10);
  EXPECT_EQ(shared_options.compute_share->urgent_steps().load(), 0);  // each decode step let go of it

  EXPECT_EQ(shared.tokens, alone.tokens);
  ASSERT_EQ(shared.logits.size(), alone.logits.size());
  for (size_t k = 0; k < alone.logits.size(); ++k) EXPECT_EQ(shared.logits[k], alone.logits[k]) << "output " << k;
}

// Weights copied into memory (the default; packed where the kernel level reads them packed) or read
// from the mapped file: the same logits; each runner says where it reads them.
TEST_F(RunnerTest, WeightsInMemoryOrMappedGiveIdenticalLogits) {
  std::vector<int32_t> prompt(ref_.prompt.begin(), ref_.prompt.end());
  const auto mapped_model = LlamaModel::load(test::model_path("stories260K.gguf"));
  CpuRunnerOptions mapped_options = options();
  mapped_options.weights_in_memory = false;
  CpuRunner mapped_runner(*mapped_model, mapped_options);
  EXPECT_FALSE(mapped_runner.weights_residence().copied);
  Driver mapped_driver(mapped_runner);
  Seq mapped;
  mapped.tokens = prompt;
  generate_alone(mapped_driver, mapped, prompt.size() + 20);

  const auto memory_model = LlamaModel::load(test::model_path("stories260K.gguf"));
  CpuRunner memory_runner(*memory_model, options());
  EXPECT_TRUE(memory_runner.weights_residence().copied) << memory_runner.weights_residence().why_not;
  Driver d(memory_runner);
  Seq in_memory;
  in_memory.tokens = prompt;
  generate_alone(d, in_memory, prompt.size() + 20);

  EXPECT_EQ(in_memory.tokens, mapped.tokens);
  ASSERT_EQ(in_memory.logits.size(), mapped.logits.size());
  for (size_t k = 0; k < mapped.logits.size(); ++k) EXPECT_EQ(in_memory.logits[k], mapped.logits[k]) << "output " << k;
}

// The runner and the single-sequence model share the reference ops, so their logits are equal
// bit for bit; checked on the second real model (plain multi-head attention, rope_dim 16).
TEST(RunnerVsModel, Aidreams260KLogitsIdentical) {
  const auto model = LlamaModel::load(test::model_path("aidreams260K.gguf"));
  CpuModel cpu(*model, 2);
  CpuRunnerOptions o;
  o.block_size = 4;  // many blocks per sequence
  o.num_blocks = 40;
  CpuRunner runner(*model, o);

  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 300, 290, 280};
  std::vector<float> logits;
  for (size_t i = 0; i < prompt.size(); ++i) logits = cpu.forward(prompt[i], static_cast<int32_t>(i));

  Seq seq;
  seq.tokens = prompt;
  Driver d(runner);
  d.add(seq, static_cast<int32_t>(prompt.size()));
  d.run();
  ASSERT_EQ(seq.logits.size(), 1u);
  EXPECT_EQ(seq.logits[0], logits);

  // Greedy continuation, 40 tokens, compared step by step.
  for (int i = 0; i < 40; ++i) {
    const int32_t next = seq.tokens.back();
    logits = cpu.forward(next, static_cast<int32_t>(seq.tokens.size()) - 1);
    d.add(seq, 1);
    d.run();
    ASSERT_EQ(seq.logits.back(), logits) << "step " << i;
  }
}

TEST_F(RunnerTest, MalformedBatchesAreRejected) {
  CpuRunner runner(*model_, options());
  auto make = [&] {
    StepBatch b;
    b.tokens = {1, 403};
    SeqChunk s;
    s.n_tokens = 2;
    s.block_table = {3};
    s.logits = LogitsMode::kArgmax;
    b.seqs.push_back(s);
    return b;
  };
  StepResult out;
  StepBatch ok = make();
  ok.finalize(runner.block_size());
  EXPECT_NO_THROW(runner.step(ok, out));
  EXPECT_EQ(out.argmax.size(), 1u);
  EXPECT_TRUE(out.logits.empty());

  auto expect_invalid = [&](StepBatch b, bool finalize) {
    if (finalize) b.finalize(runner.block_size());
    try {
      runner.step(b, out);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  };
  StepBatch bad_token = make();
  bad_token.tokens[1] = 512;
  expect_invalid(bad_token, true);
  StepBatch bad_block = make();
  bad_block.seqs[0].block_table = {64};  // the pool has blocks 0..63
  bad_block.positions = {0, 1};
  bad_block.slot_mapping = {64 * 16, 64 * 16 + 1};
  expect_invalid(bad_block, false);
  StepBatch short_table = make();
  short_table.seqs[0].n_past = 15;  // positions 15, 16 need two blocks
  short_table.positions = {15, 16};
  short_table.slot_mapping = {3 * 16 + 15, 3 * 16 + 16};
  expect_invalid(short_table, false);
  StepBatch wrong_slots = make();
  wrong_slots.finalize(runner.block_size());
  wrong_slots.slot_mapping[1] = 0;
  expect_invalid(wrong_slots, false);
  StepBatch not_finalized = make();
  expect_invalid(not_finalized, false);
  StepBatch orphan_token = make();
  orphan_token.finalize(runner.block_size());
  orphan_token.tokens.push_back(5);
  orphan_token.positions.push_back(0);
  orphan_token.slot_mapping.push_back(0);
  expect_invalid(orphan_token, false);
  StepBatch shared_slot = make();  // two sequences writing the same block
  shared_slot.seqs.push_back(shared_slot.seqs[0]);
  shared_slot.seqs[1].token_offset = 2;
  shared_slot.tokens.insert(shared_slot.tokens.end(), {1, 403});
  expect_invalid(shared_slot, true);
  StepBatch overlapping = make();
  overlapping.seqs.push_back(overlapping.seqs[0]);
  expect_invalid(overlapping, true);
  StepBatch out_of_range = make();
  out_of_range.finalize(runner.block_size());
  out_of_range.seqs[0].n_tokens = 3;
  expect_invalid(out_of_range, false);
}

}  // namespace
}  // namespace vks
