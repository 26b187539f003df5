// Routing on the device (moe_route_f32, moe_plan_i32) against the host's route_experts and
// plan_experts, the runner's reference: the same experts in the same order (ties to the lower id),
// weights to rounding (the device's exp() and float sums), and the same groups, slots and rows bit
// for bit, for every router kind the fixtures use.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/model/expert_routing.h"
#include "engine/vulkan/runner/expert_kernels.h"
#include "engine/vulkan/runner/expert_plan.h"
#include "tests/vulkan/kernels_test_util.h"

namespace vks::vk::test {
namespace {

struct RouteCase {
  const char* name;
  uint32_t n_experts, n_used;
  ExpertRouting routing;
  bool scaled;  // expert scales (Gemma 4)
};

std::string route_case_name(const ::testing::TestParamInfo<RouteCase>& info) { return info.param.name; }

class MoeRouteTest : public KernelTest, public ::testing::WithParamInterface<RouteCase> {};

// Logits of n tokens, stride apart: random, with exact ties between experts in some tokens and
// every expert tied in one.
std::vector<float> tied_logits(uint32_t n, uint32_t n_experts, uint32_t stride, uint32_t seed) {
  std::vector<float> logits = random_floats(size_t{n} * stride, seed, 2.0f);
  for (uint32_t t = 0; t < n; ++t) {
    float* row = &logits[size_t{t} * stride];
    if (t % 3 == 1) row[n_experts - 1] = row[0];          // the top one may be a tie, lower id first
    if (t % 3 == 2) row[1] = row[n_experts / 2] = row[2];  // three tied
    if (t == 5) {
      for (uint32_t e = 0; e < n_experts; ++e) row[e] = 0.25f;
    }
  }
  return logits;
}

TEST_P(MoeRouteTest, ChoosesAndGroupsAsTheHost) {
  const RouteCase c = GetParam();
  FfnSpec spec;
  spec.n_experts = c.n_experts;
  spec.n_used = c.n_used;
  spec.routing = c.routing;
  const uint32_t n = 37, stride = (c.n_experts + 3) / 4 * 4, k = c.n_used, choices = n * k;
  const std::vector<float> logits = tied_logits(n, c.n_experts, stride, 17 + c.n_experts);
  std::vector<float> scale = random_floats(c.n_experts, 3);
  for (float& s : scale) s = 0.5f + std::abs(s);
  const float* host_scale = c.scaled ? scale.data() : nullptr;
  ExpertPlan plan;
  plan_experts(logits.data(), stride, n, spec, plan, host_scale);

  const uint32_t max_slots = expert_plan_max_groups(n, spec);
  Buffer lb = upload(logits), sb = upload(scale);
  Buffer ids = upload(std::vector<int32_t>(choices, -9)), weights = upload(std::vector<float>(choices, -9.0f));
  Buffer slots = upload(std::vector<uint32_t>(size_t{max_slots} * 4, 77u));
  Buffer gather = upload(std::vector<int32_t>(choices, -9)), rows = upload(std::vector<int32_t>(choices, -9));
  Buffer row_expert = upload(std::vector<int32_t>(choices, -9));
  run([&](CommandBuffer& cmd) {
    const shader::MoeRouteParams rp{n,
                                    c.n_experts,
                                    k,
                                    stride,
                                    c.routing.order == ExpertRouting::Order::kSoftmaxThenTopK ? 1u : 0u,
                                    c.routing.order == ExpertRouting::Order::kTopKThenSoftmax ? 1u : 0u,
                                    c.routing.normalize ? 1u : 0u,
                                    c.scaled ? 1u : 0u};
    record_moe_route(cmd, kernels(), {lb.view(), sb.view(), ids.view(), weights.view()}, rp);
    cmd.barrier(Stage::kCompute, Stage::kCompute);
    record_moe_plan(cmd, kernels(), {ids.view(), slots.view(), gather.view(), rows.view(), row_expert.view()},
                    shader::MoePlanParams{choices, c.n_experts, k, max_slots});
  });

  const std::vector<int32_t> got_ids = download<int32_t>(ids, choices);
  const std::vector<float> got_w = download<float>(weights, choices);
  for (uint32_t t = 0; t < n; ++t) {
    std::vector<int32_t> want_ids(k);
    std::vector<float> want_w(k);
    route_experts(&logits[size_t{t} * stride], spec, want_ids.data(), want_w.data(), host_scale);
    for (uint32_t s = 0; s < k; ++s) {
      ASSERT_EQ(got_ids[t * k + s], want_ids[s]) << "token " << t << " choice " << s;
      EXPECT_NEAR(got_w[t * k + s], want_w[s], 2e-6f * std::max(1.0f, std::abs(want_w[s])))
          << "token " << t << " choice " << s;
    }
  }
  EXPECT_EQ(download<int32_t>(gather, choices), plan.gather);
  EXPECT_EQ(download<int32_t>(rows, choices), plan.rows);
  EXPECT_EQ(download<int32_t>(row_expert, choices), plan.row_expert);
  std::vector<uint32_t> want_slots = plan.slots;
  want_slots.resize(size_t{max_slots} * 4, 0u);  // the slots past the experts in use are empty
  EXPECT_EQ(download<uint32_t>(slots, size_t{max_slots} * 4), want_slots);
}

INSTANTIATE_TEST_SUITE_P(
    Routers, MoeRouteTest,
    ::testing::Values(
        // qwen3moe: softmax, top 8 of 128, renormalized.
        RouteCase{"softmax_topk_norm", 128, 8, {ExpertRouting::Order::kSoftmaxThenTopK, true}, false},
        // Mixtral-style llama without renormalization.
        RouteCase{"softmax_topk", 8, 2, {ExpertRouting::Order::kSoftmaxThenTopK, false}, false},
        // gpt-oss: the top 4 logits, softmaxed.
        RouteCase{"topk_softmax", 32, 4, {ExpertRouting::Order::kTopKThenSoftmax, false}, false},
        // Gemma 4: softmax, renormalized, each expert's output scaled.
        RouteCase{"softmax_topk_norm_scaled", 16, 4, {ExpertRouting::Order::kSoftmaxThenTopK, true}, true}),
    route_case_name);

TEST_F(KernelTest, MoePlanRefusesMoreExpertsThanItsSharedArrays) {
  Buffer b = upload(std::vector<int32_t>(64, 0));
  run([&](CommandBuffer& cmd) {
    EXPECT_THROW(record_moe_plan(cmd, kernels(), {b.view(), b.view(), b.view(), b.view(), b.view()},
                                 shader::MoePlanParams{4, VKS_MOE_MAX_EXPERTS + 1, 1, 4}),
                 Error);
  });
}

}  // namespace
}  // namespace vks::vk::test
