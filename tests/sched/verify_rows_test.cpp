// Speculative verification at the runner: a step of [last token, d1..dk] with n_verify = k gives, at
// every position, the greedy token plain decoding gives there (bit-identical logits: the kernels are
// batch-invariant), with correct and wrong drafts, next to other sequences. And check_step_batch's
// rules for n_verify and output rows. Built for the CPU runner (label unit) and for Vulkan
// (VKS_VERIFY_TEST_VULKAN, label vulkan: lavapipe here).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/model/step_batch_check.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#ifdef VKS_VERIFY_TEST_VULKAN
#include "engine/vulkan/runner/runner_factory.h"
#else
#include "engine/cpu/cpu_runner.h"
#endif

namespace vks::test {
namespace {

constexpr int32_t kBlock = 4;

std::unique_ptr<ModelRunner> make(const LlamaModel& model) {
#ifdef VKS_VERIFY_TEST_VULKAN
  RunnerOptions o;
  o.allow_cpu_fallback = false;
  o.force_vulkan = true;
  o.block_size = kBlock;
  o.num_blocks = 64;
  o.max_step_tokens = 64;
  o.max_step_seqs = 16;
  try {
    return make_runner(model, o);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kDevice) return nullptr;
    throw;
  }
#else
  CpuRunnerOptions o;
  o.block_size = kBlock;
  o.num_blocks = 64;
  o.threads = 2;
  o.max_step_seqs = 16;
  return std::make_unique<CpuRunner>(model, o);
#endif
}

// One sequence's chunk of `tokens` at n_past over blocks [first_block, ...).
SeqChunk chunk(StepBatch& b, const std::vector<int32_t>& tokens, int32_t n_past, int32_t first_block, int32_t n_verify) {
  SeqChunk c;
  c.token_offset = static_cast<int32_t>(b.tokens.size());
  c.n_tokens = static_cast<int32_t>(tokens.size());
  c.n_past = n_past;
  for (int32_t i = 0; i < 8; ++i) c.block_table.push_back(first_block + i);
  c.logits = LogitsMode::kArgmax;
  c.n_verify = n_verify;
  b.tokens.insert(b.tokens.end(), tokens.begin(), tokens.end());
  return c;
}

// Greedy decoding, one token per step, of `prompt` over blocks [first_block, ...).
std::vector<int32_t> plain(ModelRunner& r, const std::vector<int32_t>& prompt, int32_t n, int32_t first_block) {
  std::vector<int32_t> out;
  std::vector<int32_t> next = prompt;
  int32_t n_past = 0;
  for (int32_t i = 0; i < n; ++i) {
    StepBatch b;
    b.seqs.push_back(chunk(b, next, n_past, first_block, 0));
    b.finalize(r.block_size());
    StepResult res;
    r.step(b, res);
    n_past += static_cast<int32_t>(next.size());
    out.push_back(res.argmax[0]);
    next = {res.argmax[0]};
  }
  return out;
}

class VerifyRows : public ::testing::TestWithParam<const char*> {};

TEST_P(VerifyRows, EveryVerifiedPositionIsPlainDecodingsToken) {
  auto model = LlamaModel::load(model_path(GetParam()));
  auto runner = make(*model);
  if (!runner) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: test skipped");
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const std::vector<int32_t> ref = plain(*runner, prompt, 9, 0);  // blocks 0..7

  // Prefill the prompt into blocks 16.. (and a companion into 32..), then verify 7 drafts at once:
  // the first four right, then wrong ones.
  StepBatch pre;
  pre.seqs.push_back(chunk(pre, prompt, 0, 16, 0));
  pre.seqs.push_back(chunk(pre, {1, 300, 301}, 0, 32, 0));
  pre.finalize(runner->block_size());
  StepResult res;
  runner->step(pre, res);
  ASSERT_EQ(res.argmax[0], ref[0]);
  ASSERT_TRUE(res.verify_argmax.empty());

  std::vector<int32_t> drafts(ref.begin() + 1, ref.begin() + 5);
  for (int32_t t : {7, 8, 9}) drafts.push_back(t);
  std::vector<int32_t> verify = {ref[0]};
  verify.insert(verify.end(), drafts.begin(), drafts.end());
  StepBatch step;
  step.seqs.push_back(chunk(step, {res.argmax[1]}, 3, 32, 0));  // the companion decodes plainly
  step.seqs.push_back(chunk(step, verify, 5, 16, static_cast<int32_t>(drafts.size())));
  step.finalize(runner->block_size());
  runner->step(step, res);
  ASSERT_EQ(res.verify_argmax.size(), drafts.size());
  // The first five positions follow plain decoding's tokens, so their argmax is plain decoding's.
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(res.verify_argmax[i], ref[i + 1]) << "position " << i;

  // A rejected tail leaves stale K/V at positions 10..12; continuing from the accepted prefix
  // overwrites them and decodes exactly as plain decoding does.
  StepBatch next;
  next.seqs.push_back(chunk(next, {ref[5]}, 10, 16, 0));
  next.finalize(runner->block_size());
  runner->step(next, res);
  EXPECT_EQ(res.argmax[0], ref[6]);
  StepBatch after;
  after.seqs.push_back(chunk(after, {ref[6], ref[7]}, 11, 16, 1));
  after.finalize(runner->block_size());
  runner->step(after, res);
  ASSERT_EQ(res.verify_argmax.size(), 1u);
  EXPECT_EQ(res.verify_argmax[0], ref[7]);
  EXPECT_EQ(res.argmax[0], ref[8]);
}

// Sampled speculation draws from the verified positions' rows: with kFull, a step of
// [last token, d1..dk] gives k+1 logits rows equal, bit for bit, to the rows plain decoding's
// steps give at those positions (next to a companion sequence), and the same argmaxes as kArgmax.
TEST_P(VerifyRows, FullRowsOfVerifiedPositionsArePlainDecodingsRows) {
  auto model = LlamaModel::load(model_path(GetParam()));
  auto runner = make(*model);
  if (!runner) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: test skipped");
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const std::vector<int32_t> ref = plain(*runner, prompt, 5, 0);  // blocks 0..7
  const size_t vocab = static_cast<size_t>(runner->config().vocab_size);
  // Plain decoding's rows at positions 5..8 (after prompt + ref[0..3]), one step each.
  std::vector<float> plain_rows;
  StepResult res;
  for (int32_t i = 0; i < 4; ++i) {
    StepBatch b;
    b.seqs.push_back(chunk(b, {ref[static_cast<size_t>(i)]}, 5 + i, 0, 0));
    b.seqs[0].logits = LogitsMode::kFull;
    b.finalize(runner->block_size());
    runner->step(b, res);
    ASSERT_EQ(res.logits.size(), vocab);
    plain_rows.insert(plain_rows.end(), res.logits.begin(), res.logits.end());
  }
  StepBatch pre;
  pre.seqs.push_back(chunk(pre, prompt, 0, 16, 0));
  pre.seqs.push_back(chunk(pre, {1, 300, 301}, 0, 32, 0));
  pre.finalize(runner->block_size());
  runner->step(pre, res);
  StepBatch step;
  step.seqs.push_back(chunk(step, {res.argmax[1]}, 3, 32, 0));
  step.seqs[0].logits = LogitsMode::kFull;  // a plain kFull row before the verified ones
  step.seqs.push_back(chunk(step, {ref[0], ref[1], ref[2], ref[3]}, 5, 16, 3));
  step.seqs[1].logits = LogitsMode::kFull;
  step.finalize(runner->block_size());
  runner->step(step, res);
  ASSERT_EQ(res.logits.size(), 5 * vocab);
  ASSERT_EQ(res.verify_argmax.size(), 3u);
  for (size_t row = 0; row < 4; ++row) {
    const float* got = res.logits.data() + (1 + row) * vocab;
    const float* want = plain_rows.data() + row * vocab;
    EXPECT_TRUE(std::equal(got, got + vocab, want)) << "row " << row;
  }
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(res.verify_argmax[i], ref[i + 1]) << "position " << i;
  EXPECT_EQ(res.argmax[1], ref[4]);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, VerifyRows, ::testing::Values("stories260K.gguf", "qwen2-tiny.gguf"));

#ifndef VKS_VERIFY_TEST_VULKAN
TEST(StepBatchCheck, RefusesBadVerifyRowsAndSharedSlots) {
  const StepLimits lim{512, 4, 16, 32, 3, 8};
  std::vector<int32_t> token_seq, scratch;
  auto expect_invalid = [&](const StepBatch& b, const std::string& needle) {
    try {
      check_step_batch(b, lim, token_seq, scratch);
      ADD_FAILURE() << "accepted a batch that should fail with: " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  StepBatch ok;
  ok.seqs.push_back(chunk(ok, {1, 2, 3}, 0, 0, 2));  // 3 output rows: the limit
  ok.finalize(4);
  EXPECT_NO_THROW(check_step_batch(ok, lim, token_seq, scratch));
  StepBatch rows = ok;
  rows.seqs.push_back(chunk(rows, {4}, 0, 8, 0));
  rows.finalize(4);
  expect_invalid(rows, "output rows");
  StepBatch too_many = ok;
  too_many.seqs[0].n_verify = 3;
  expect_invalid(too_many, "n_verify");
  StepBatch full = ok;
  full.seqs[0].logits = LogitsMode::kFull;
  EXPECT_NO_THROW(check_step_batch(full, lim, token_seq, scratch));
  StepBatch hidden = ok;
  hidden.seqs[0].logits = LogitsMode::kHidden;
  expect_invalid(hidden, "n_verify");
  StepBatch shared;  // two sequences whose tables share block 0 both write position 0
  shared.seqs.push_back(chunk(shared, {1}, 0, 0, 0));
  shared.seqs.push_back(chunk(shared, {2}, 0, 0, 0));
  shared.finalize(4);
  expect_invalid(shared, "slot");
}

TEST(StepBatchCheck, ChecksWindowTablesAgainstTheWindowPool) {
  // A runner with a window pool of 6 blocks: each sequence needs a window table covering its
  // positions with ids in [0, 6), window slots from finalize() and no two tokens on one window slot.
  StepLimits lim{512, 4, 16, 32, 3, 8};
  lim.num_window_blocks = 6;
  std::vector<int32_t> token_seq, scratch;
  auto expect_invalid = [&](const StepBatch& b, const std::string& needle) {
    try {
      check_step_batch(b, lim, token_seq, scratch);
      ADD_FAILURE() << "accepted a batch that should fail with: " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  StepBatch ok;
  ok.seqs.push_back(chunk(ok, {1, 2}, 8, 0, 0));  // positions 8, 9: block 2
  ok.seqs[0].window_block_table = {0, 0, 5};       // blocks 0-1 given back: any valid id
  ok.finalize(4);
  ASSERT_EQ(ok.window_slot_mapping, (std::vector<int32_t>{20, 21}));
  EXPECT_NO_THROW(check_step_batch(ok, lim, token_seq, scratch));
  StepBatch none = ok;
  none.seqs[0].window_block_table.clear();
  none.finalize(4);
  expect_invalid(none, "0 window slots");
  StepBatch short_table = ok;
  short_table.seqs[0].window_block_table.pop_back();
  short_table.finalize(4);
  expect_invalid(short_table, "window block table has 2 blocks");
  StepBatch outside = ok;
  outside.seqs[0].window_block_table[2] = 6;
  outside.finalize(4);
  expect_invalid(outside, "out of the pool [0, 6)");
  StepBatch stale = ok;
  stale.window_slot_mapping[1] = 3;
  expect_invalid(stale, "window slot");
  StepBatch shared = ok;  // a second sequence writing the same window block at the same offset
  shared.seqs.push_back(chunk(shared, {3}, 8, 8, 0));
  shared.seqs[1].window_block_table = {0, 0, 5};
  shared.finalize(4);
  expect_invalid(shared, "two tokens write window KV slot");
}
#endif

}  // namespace
}  // namespace vks::test
