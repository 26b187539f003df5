// route_experts against values worked out by hand from llama.cpp's build_moe_ffn: which experts a
// token runs, in which order, and with which weights, for each routing order and normalization.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/model/expert_routing.h"

namespace vks {
namespace {

FfnSpec spec(uint32_t n, uint32_t k, ExpertRouting::Order order, bool normalize) {
  FfnSpec s;
  s.hidden = 8;
  s.n_experts = n;
  s.n_used = k;
  s.routing = ExpertRouting{order, normalize};
  return s;
}

TEST(ExpertRouting, SoftmaxThenTopKRenormalized) {
  // logits 0, ln 2, ln 4, ln 1: softmax 1/8, 2/8, 4/8, 1/8; top 2 = experts 2, 1 (4/8, 2/8);
  // renormalized 2/3, 1/3.
  const std::vector<float> logits{0.0f, std::log(2.0f), std::log(4.0f), 0.0f};
  int32_t ids[2];
  float w[2];
  route_experts(logits.data(), spec(4, 2, ExpertRouting::Order::kSoftmaxThenTopK, true), ids, w);
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 1);
  EXPECT_NEAR(w[0], 2.0f / 3.0f, 1e-6f);
  EXPECT_NEAR(w[1], 1.0f / 3.0f, 1e-6f);
}

TEST(ExpertRouting, ExpertScalesMultiplyTheNormalizedWeights) {
  // Gemma 4: the same choice as above (2/3, 1/3), then each weight times its expert's scale; the
  // scales do not change which experts are chosen.
  const std::vector<float> logits{0.0f, std::log(2.0f), std::log(4.0f), 0.0f};
  const std::vector<float> scales{10.0f, 0.5f, 3.0f, 100.0f};
  int32_t ids[2];
  float w[2];
  route_experts(logits.data(), spec(4, 2, ExpertRouting::Order::kSoftmaxThenTopK, true), ids, w, scales.data());
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 1);
  EXPECT_NEAR(w[0], 3.0f * 2.0f / 3.0f, 1e-6f);
  EXPECT_NEAR(w[1], 0.5f / 3.0f, 1e-6f);
}

TEST(ExpertRouting, SoftmaxThenTopKWithoutNormalizationKeepsTheProbabilities) {
  const std::vector<float> logits{0.0f, std::log(2.0f), std::log(4.0f), 0.0f};
  int32_t ids[2];
  float w[2];
  route_experts(logits.data(), spec(4, 2, ExpertRouting::Order::kSoftmaxThenTopK, false), ids, w);
  EXPECT_NEAR(w[0], 0.5f, 1e-6f);
  EXPECT_NEAR(w[1], 0.25f, 1e-6f);
}

TEST(ExpertRouting, TopKThenSoftmaxWeighsOverTheChosenOnly) {
  // gpt-oss: the 2 largest logits (3 and 1: experts 3, 0), softmax over them: e^2/(e^2+1), 1/(e^2+1).
  const std::vector<float> logits{1.0f, -5.0f, 0.5f, 3.0f};
  int32_t ids[2];
  float w[2];
  route_experts(logits.data(), spec(4, 2, ExpertRouting::Order::kTopKThenSoftmax, false), ids, w);
  EXPECT_EQ(ids[0], 3);
  EXPECT_EQ(ids[1], 0);
  const float e2 = std::exp(2.0f);
  EXPECT_NEAR(w[0], e2 / (e2 + 1.0f), 1e-6f);
  EXPECT_NEAR(w[1], 1.0f / (e2 + 1.0f), 1e-6f);
}

TEST(ExpertRouting, TiesGoToTheLowerExpert) {
  const std::vector<float> logits{0.5f, 2.0f, 2.0f, 2.0f, -1.0f};
  int32_t ids[3];
  float w[3];
  route_experts(logits.data(), spec(5, 3, ExpertRouting::Order::kSoftmaxThenTopK, true), ids, w);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 2);
  EXPECT_EQ(ids[2], 3);
  EXPECT_FLOAT_EQ(w[0] + w[1] + w[2], 1.0f);
}

TEST(ExpertRouting, OneExpertOfManyGetsTheWholeWeightWhenNormalized) {
  std::vector<float> logits(128);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 37) % 101) / 10.0f;
  int32_t id;
  float w;
  route_experts(logits.data(), spec(128, 1, ExpertRouting::Order::kSoftmaxThenTopK, true), &id, &w);
  EXPECT_EQ(id, 30);  // (i * 37) % 101 == 100 only at i = 30 below 128: logit 10, the largest
  EXPECT_EQ(w, 1.0f);
}

}  // namespace
}  // namespace vks

namespace vks {
namespace {

TEST(ExpertGroups, ChoicesByExpertInAscendingOrder) {
  // 4 tokens x 2 choices over 5 experts; expert 2 and 4 chosen by nobody.
  const std::vector<int32_t> ids{3, 1, 0, 3, 1, 0, 3, 1};
  ExpertGroups g;
  group_by_expert(ids.data(), ids.size(), 5, g);
  EXPECT_EQ(g.starts, (std::vector<uint32_t>{0, 2, 5, 5, 8, 8}));
  EXPECT_EQ(g.choices, (std::vector<uint32_t>{2, 5, 1, 4, 7, 0, 3, 6}));
  EXPECT_EQ(g.count(2), 0u);
  group_by_expert(ids.data(), 2, 5, g);  // storage reused, a shorter step
  EXPECT_EQ(g.starts, (std::vector<uint32_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(g.choices, (std::vector<uint32_t>{1, 0}));
}

}  // namespace
}  // namespace vks
