// The CPU reference model against llama2.c's run.c on stories260K: greedy ids, text and logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/cpu/cpu_model.h"
#include "engine/cpu/reference_ops.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/common/test_models.h"
#include "tests/cpu/reference_data.h"

namespace vks {
namespace {

class Stories260K : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = LlamaModel::load(test::model_path("stories260K.gguf"));
    tok_ = Tokenizer::from_gguf(model_->file());
    ref_ = test::load_greedy_reference();
    ASSERT_EQ(ref_.prompt.size(), 5u) << "reference ids not found under " << test::models_dir();
    ASSERT_EQ(ref_.generated.size(), 60u);
  }
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
  test::GreedyReference ref_;
};

TEST_F(Stories260K, PromptTokenizesLikeReference) {
  EXPECT_EQ(tok_->encode("Once upon a time", true), ref_.prompt);
}

TEST_F(Stories260K, LogitsAfterPromptMatchReference) {
  const std::vector<float> expected = test::load_reference_logits();
  ASSERT_EQ(expected.size(), 512u);
  CpuModel cpu(*model_, 2);
  std::vector<float> logits;
  for (size_t i = 0; i < ref_.prompt.size(); ++i) logits = cpu.forward(ref_.prompt[i], static_cast<int32_t>(i));
  ASSERT_EQ(logits.size(), expected.size());
  float max_diff = 0;
  for (size_t i = 0; i < logits.size(); ++i) max_diff = std::max(max_diff, std::fabs(logits[i] - expected[i]));
  EXPECT_LE(max_diff, 1e-4f);
  EXPECT_EQ(ref::argmax(logits.data(), logits.size()), ref_.generated[0]);
}

TEST_F(Stories260K, GreedyGenerationMatchesReference) {
  CpuModel cpu(*model_, 2);
  std::vector<int32_t> ids = tok_->encode("Once upon a time", true);
  ASSERT_EQ(ids, ref_.prompt);
  int32_t next = -1;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::vector<float>& logits = cpu.forward(ids[i], static_cast<int32_t>(i));
    next = ref::argmax(logits.data(), logits.size());
  }
  std::vector<int32_t> generated;
  while (generated.size() < ref_.generated.size()) {
    generated.push_back(next);
    const std::vector<float>& logits = cpu.forward(next, static_cast<int32_t>(ids.size() + generated.size() - 1));
    next = ref::argmax(logits.data(), logits.size());
  }
  EXPECT_EQ(generated, ref_.generated);
  ids.insert(ids.end(), generated.begin(), generated.end());
  EXPECT_EQ(tok_->decode(ids), test::load_greedy_reference_text());
}

TEST_F(Stories260K, ThreadCountDoesNotChangeLogits) {
  CpuModel one(*model_, 1);
  CpuModel three(*model_, 3);
  for (size_t i = 0; i < ref_.prompt.size(); ++i) {
    const std::vector<float> a = one.forward(ref_.prompt[i], static_cast<int32_t>(i));
    const std::vector<float>& b = three.forward(ref_.prompt[i], static_cast<int32_t>(i));
    ASSERT_EQ(a, b) << "position " << i;
  }
}

TEST_F(Stories260K, BadInputsAreErrors) {
  CpuModel cpu(*model_, 1, 8);
  EXPECT_THROW(cpu.forward(512, 0), Error);
  EXPECT_THROW(cpu.forward(-1, 0), Error);
  EXPECT_THROW(cpu.forward(1, 1), Error);  // position 0 not run yet
  cpu.forward(1, 0);
  EXPECT_THROW(cpu.forward(1, 8), Error);  // beyond the cache
  try {
    cpu.forward(1, 8);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace vks
