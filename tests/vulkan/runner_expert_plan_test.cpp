// The host side of expert layers on the device (expert_plan.h): (token, choice) pairs grouped by
// expert, each group starting at an aligned row, every output row found again through `rows`.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "engine/model/expert_routing.h"
#include "engine/vulkan/runner/expert_plan.h"

namespace vks::vk {
namespace {

TEST(ExpertPlan, GroupsEveryChoiceByExpertAtAlignedRows) {
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
  plan_experts(logits.data(), stride, n, spec, 4, plan);

  // Experts in use: 0, 1, 3, 5 (2 and 4 chosen by nobody), in order, each at a multiple of 4.
  ASSERT_EQ(plan.groups.size(), 4u);
  const uint32_t used[] = {0, 1, 3, 5};
  const uint32_t counts[] = {2, 3, 3, 2};
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    EXPECT_EQ(plan.groups[g].expert, used[g]);
    EXPECT_EQ(plan.groups[g].n_rows, counts[g]);
    EXPECT_EQ(plan.groups[g].first_row % 4, 0u);
  }
  EXPECT_EQ(plan.padded_rows, 16u);
  EXPECT_LE(plan.padded_rows, expert_plan_max_rows(n, spec, 4));
  // Every (token, choice) has its own row, in its expert's group, gathering that token's input.
  std::set<int32_t> rows;
  for (uint32_t t = 0; t < n; ++t) {
    for (uint32_t s = 0; s < 2; ++s) {
      const int32_t row = plan.rows[t * 2 + s];
      EXPECT_TRUE(rows.insert(row).second) << "row " << row << " used twice";
      EXPECT_EQ(plan.gather[static_cast<size_t>(row)], static_cast<int32_t>(t));
      const auto& g = *std::find_if(plan.groups.begin(), plan.groups.end(),
                                    [&](const ExpertPlan::Group& x) { return x.expert == uint32_t(best[t][s]); });
      EXPECT_GE(static_cast<uint32_t>(row), g.first_row);
      EXPECT_LT(static_cast<uint32_t>(row), g.first_row + g.n_rows);
    }
    EXPECT_NEAR(plan.weights[t * 2] + plan.weights[t * 2 + 1], 1.0f, 1e-6f);
    EXPECT_GT(plan.weights[t * 2], plan.weights[t * 2 + 1]);
  }
  for (size_t r = 0; r < plan.gather.size(); ++r) {
    if (!rows.count(static_cast<int32_t>(r))) {
      EXPECT_EQ(plan.gather[r], -1) << "padding row " << r;
    }
  }
}

TEST(ExpertPlan, RowsForAlignment) {
  EXPECT_EQ(rows_for_alignment(16, {16, 32}), 1u);
  EXPECT_EQ(rows_for_alignment(64, {16}), 4u);
  EXPECT_EQ(rows_for_alignment(256, {48, 64}), 16u);  // 48: 16 rows; 64: 4 rows
}

}  // namespace
}  // namespace vks::vk
