// Packing and validation of a StepBatch (no device needed).
#include <gtest/gtest.h>

#include "engine/common/error.h"
#include "engine/vulkan/runner/step_inputs.h"

namespace vks {
namespace {

StepLimits limits() { return StepLimits{512, 4, 10, 32, 4, 5}; }

StepBatch two_seqs() {
  StepBatch b;
  b.tokens = {1, 2, 3, 4, 5, 6};
  SeqChunk a;  // prefill of 5 tokens from scratch
  a.token_offset = 0;
  a.n_tokens = 5;
  a.block_table = {7, 2};
  a.logits = LogitsMode::kArgmax;
  SeqChunk d;  // one decode token at position 9
  d.token_offset = 5;
  d.n_tokens = 1;
  d.n_past = 9;
  d.block_table = {0, 1, 9};
  d.logits = LogitsMode::kFull;
  b.seqs = {a, d};
  b.finalize(4);
  return b;
}

void expect_invalid(const StepBatch& b, const std::string& needle) {
  StepInputs in;
  try {
    pack_step_inputs(b, limits(), in);
    FAIL() << "accepted a batch that should fail with: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(RunnerStepInputs, PacksWindowTablesBesideTheFullOnes) {
  // A window pool of 3 blocks: each sequence's window table is padded like its block table; none
  // are packed without the pool.
  StepBatch b = two_seqs();
  b.seqs[0].window_block_table = {1, 2};
  b.seqs[1].window_block_table = {0, 0, 2};  // blocks 0-1 given back: any valid id
  b.finalize(4);
  StepLimits lim = limits();
  lim.num_window_blocks = 3;
  StepInputs in;
  pack_step_inputs(b, lim, in);
  EXPECT_EQ(in.window_block_tables, (std::vector<int32_t>{1, 2, 0, 0, 0, 0, 0, 2, 0, 0}));
  EXPECT_EQ(in.block_tables, (std::vector<int32_t>{7, 2, 0, 0, 0, 0, 1, 9, 0, 0}));
  pack_step_inputs(two_seqs(), limits(), in);
  EXPECT_TRUE(in.window_block_tables.empty());
}

TEST(RunnerStepInputs, PacksSequencesTablesAndOutputRows) {
  StepInputs in;
  pack_step_inputs(two_seqs(), limits(), in);
  EXPECT_EQ(in.n_tokens, 6);
  EXPECT_EQ(in.n_seqs, 2);
  EXPECT_EQ(in.token_seq, (std::vector<int32_t>{0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(in.block_tables, (std::vector<int32_t>{7, 2, 0, 0, 0, 0, 1, 9, 0, 0}));
  EXPECT_EQ(in.out_rows, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(in.out_seq, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(in.n_full, 1);
  // The decode token at position 9 attends to 10 keys, the prefill's last to 5: the attention
  // kernels size their parallel splits by the longest.
  EXPECT_EQ(in.longest_keys, 10);
  StepBatch prefill = two_seqs();
  prefill.tokens.resize(5);
  prefill.seqs.resize(1);
  prefill.finalize(4);
  pack_step_inputs(prefill, limits(), in);  // into the same inputs: nothing of the last step stays
  EXPECT_EQ(in.longest_keys, 5);
  // The longest row first: the furthest token, not the last one, sets it.
  StepBatch decode_first = two_seqs();
  std::swap(decode_first.seqs[0], decode_first.seqs[1]);
  decode_first.seqs[0].token_offset = 0;
  decode_first.seqs[1].token_offset = 1;
  decode_first.finalize(4);
  pack_step_inputs(decode_first, limits(), in);
  EXPECT_EQ(in.longest_keys, 10);
}

TEST(RunnerStepInputs, RejectsBadBatches) {
  StepBatch b = two_seqs();
  b.tokens[2] = 512;
  expect_invalid(b, "outside the vocabulary");
  b = two_seqs();
  b.seqs[1].block_table = {0, 1};
  expect_invalid(b, "need 3");
  b = two_seqs();
  b.seqs[0].block_table[1] = 10;
  expect_invalid(b, "out of the pool");
  b = two_seqs();
  b.positions[3] = 7;
  expect_invalid(b, "finalize");
  b = two_seqs();
  b.slot_mapping[5] = 0;
  expect_invalid(b, "finalize");
  b = two_seqs();
  b.seqs[1].token_offset = 4;
  expect_invalid(b, "belongs to seqs");
  b = two_seqs();
  b.seqs[1].n_tokens = 0;
  expect_invalid(b, "outside the batch");
  b = two_seqs();
  b.seqs[1].n_past = 20;  // length 21 > 5 blocks of 4
  b.seqs[1].block_table = {0, 1, 2, 3, 4, 5};
  b.finalize(4);
  expect_invalid(b, "longest sequence");
  b = two_seqs();
  b.seqs.pop_back();
  b.tokens.pop_back();
  b.positions.pop_back();
  b.slot_mapping.pop_back();
  StepInputs in;
  EXPECT_NO_THROW(pack_step_inputs(b, limits(), in));
  b.tokens.push_back(3);
  b.positions.push_back(0);
  b.slot_mapping.push_back(0);
  expect_invalid(b, "belongs to no sequence");
  StepBatch empty;
  expect_invalid(empty, "no tokens");
  b = two_seqs();
  b.tokens.resize(40, 1);
  expect_invalid(b, "max_step_tokens");
}

}  // namespace
}  // namespace vks
