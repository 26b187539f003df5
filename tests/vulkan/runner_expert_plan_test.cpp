// The host's description of an expert layer's plan (expert_plan.h; the device builds the same, see
// kernels_moe_route_test.cpp): (token, choice) pairs grouped by expert in consecutive rows, the
// groups as mul_mat_id's slots, every output row found again through `rows` and its expert through
// `row_expert`.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "engine/model/expert_routing.h"
#include "engine/vulkan/runner/expert_plan.h"
#include "engine/vulkan/shaders/moe_params.h"

namespace vks::vk {
namespace {

TEST(ExpertPlan, GroupsEveryChoiceByExpertInConsecutiveRows) {
  FfnSpec spec;
  spec.hidden = 4;
  spec.n_experts = 6;
  spec.n_used = 2;
  spec.routing = ExpertRouting{ExpertRouting::Order::kSoftmaxThenTopK, true};
  const uint32_t n = 5, stride = 8;  // logits rows padded to 8
  std::vector<float> logits(n * stride, -100.0f);
  const int best[n][2] = {{3, 1}, {1, 3}, {5, 0}, {3, 5}, {0, 1}};
  for (uint32_t t = 0; t < n; ++t) {
    for (uint32_t e = 0; e < spec.n_experts; ++e) logits[t * stride + e] = 0.01f * static_cast<float>(e);
    logits[t * stride + static_cast<uint32_t>(best[t][0])] = 3.0f;
    logits[t * stride + static_cast<uint32_t>(best[t][1])] = 2.0f;
  }
  ExpertPlan plan;
  plan_experts(logits.data(), stride, n, spec, plan);

  // Experts in use: 0, 1, 3, 5 (2 and 4 chosen by nobody), in order, one after the other.
  ASSERT_EQ(plan.groups.size(), 4u);
  const uint32_t used[] = {0, 1, 3, 5};
  const uint32_t counts[] = {2, 3, 3, 2};
  uint32_t next = 0;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    EXPECT_EQ(plan.groups[g].expert, used[g]);
    EXPECT_EQ(plan.groups[g].n_rows, counts[g]);
    EXPECT_EQ(plan.groups[g].first_row, next);
    next += counts[g];
    const uint32_t slot[4] = {used[g], plan.groups[g].first_row, counts[g], 0};
    for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(plan.slots[g * 4 + i], slot[i]) << "slot " << g << " word " << i;
  }
  EXPECT_EQ(plan.slots.size(), 16u);
  EXPECT_EQ(plan.max_group_rows, 3u);
  EXPECT_EQ(plan.gather.size(), 10u);
  EXPECT_EQ(plan.gather.size(), expert_plan_max_rows(n, spec));
  EXPECT_LE(plan.groups.size(), expert_plan_max_groups(n, spec));
  // Every (token, choice) has its own row, in its expert's group, gathering that token's input.
  std::set<int32_t> rows;
  for (uint32_t t = 0; t < n; ++t) {
    for (uint32_t s = 0; s < 2; ++s) {
      const int32_t row = plan.rows[t * 2 + s];
      EXPECT_TRUE(rows.insert(row).second) << "row " << row << " used twice";
      EXPECT_EQ(plan.gather[static_cast<size_t>(row)], static_cast<int32_t>(t));
      EXPECT_EQ(plan.row_expert[static_cast<size_t>(row)], best[t][s]);
      const auto& g = *std::find_if(plan.groups.begin(), plan.groups.end(),
                                    [&](const ExpertPlan::Group& x) { return x.expert == uint32_t(best[t][s]); });
      EXPECT_GE(static_cast<uint32_t>(row), g.first_row);
      EXPECT_LT(static_cast<uint32_t>(row), g.first_row + g.n_rows);
    }
    EXPECT_NEAR(plan.weights[t * 2] + plan.weights[t * 2 + 1], 1.0f, 1e-6f);
    EXPECT_GT(plan.weights[t * 2], plan.weights[t * 2 + 1]);
  }
  EXPECT_EQ(rows.size(), plan.gather.size());
}

// A group of more rows than a token tile takes one slot per tile (Ops::matmul_id's grid has one
// tile a slot), in row order.
TEST(ExpertPlan, CutsGroupsIntoSlotsOfATileOfRows) {
  FfnSpec spec;
  spec.n_experts = 4;
  spec.n_used = 1;
  spec.routing = ExpertRouting{ExpertRouting::Order::kSoftmaxThenTopK, false};
  const uint32_t n = 19, stride = 4;
  std::vector<float> logits(n * stride, 0.0f);
  for (uint32_t t = 0; t < n; ++t) logits[t * stride + (t == 3 ? 0 : 2)] = 5.0f;
  ExpertPlan plan;
  plan_experts(logits.data(), stride, n, spec, plan);
  static_assert(VKS_MOE_SLOT_ROWS == 8, "the slots below are cut at 8 rows");
  const std::vector<uint32_t> want{0, 0, 1, 0, 2, 1, 8, 0, 2, 9, 8, 0, 2, 17, 2, 0};
  EXPECT_EQ(plan.slots, want);
  EXPECT_EQ(plan.max_group_rows, 18u);
  EXPECT_LE(plan.slots.size() / 4, expert_plan_max_groups(n, spec));
}

// One slot per expert in use, one more per tile of rows: the most a step's choices can need.
TEST(ExpertPlan, MaxGroupsCountsASlotPerExpertAndPerTileOfRows) {
  FfnSpec spec;
  spec.n_experts = 128;
  spec.n_used = 8;
  EXPECT_EQ(expert_plan_max_groups(1, spec), 8u + 1u);
  EXPECT_EQ(expert_plan_max_groups(100, spec), 128u + 100u);
  EXPECT_EQ(expert_plan_max_rows(100, spec), 800u);
}

}  // namespace
}  // namespace vks::vk
