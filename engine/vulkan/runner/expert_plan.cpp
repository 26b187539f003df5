#include "engine/vulkan/runner/expert_plan.h"

#include <algorithm>
#include <cstddef>

#include "engine/model/expert_routing.h"
#include "engine/vulkan/shaders/moe_params.h"

namespace vks::vk {

uint32_t expert_plan_max_rows(uint32_t n_tokens, const FfnSpec& spec) { return n_tokens * spec.n_used; }

// ceil(c / S) <= 1 + floor(c / S) for each group, and the floors add up to at most floor(rows / S).
uint32_t expert_plan_max_groups(uint32_t n_tokens, const FfnSpec& spec) {
  const uint32_t rows = n_tokens * spec.n_used;
  return std::min(spec.n_experts, rows) + rows / VKS_MOE_SLOT_ROWS;
}

void plan_experts(const float* logits, uint32_t logits_stride, uint32_t n_tokens, const FfnSpec& spec,
                  ExpertPlan& plan, const float* expert_scale) {
  const uint32_t k = spec.n_used;
  const size_t n_rows = std::size_t{n_tokens} * k;
  plan.rows.resize(n_rows);
  plan.weights.resize(n_rows);
  std::vector<int32_t> ids(n_rows);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    route_experts(logits + std::size_t{t} * logits_stride, spec, &ids[std::size_t{t} * k], &plan.weights[std::size_t{t} * k],
                  expert_scale);
  }
  group_by_expert(ids.data(), ids.size(), spec.n_experts, plan.by_expert);
  plan.groups.clear();
  plan.slots.clear();
  plan.gather.clear();
  plan.row_expert.clear();
  plan.max_group_rows = 0;
  for (uint32_t e = 0; e < spec.n_experts; ++e) {
    const uint32_t m = plan.by_expert.count(e);
    if (m == 0) continue;
    const uint32_t first = static_cast<uint32_t>(plan.gather.size());
    plan.groups.push_back({e, first, m});
    for (uint32_t r = 0; r < m; r += VKS_MOE_SLOT_ROWS) {
      plan.slots.insert(plan.slots.end(), {e, first + r, std::min<uint32_t>(m - r, VKS_MOE_SLOT_ROWS), 0u});
    }
    plan.max_group_rows = std::max(plan.max_group_rows, m);
    for (uint32_t j = 0; j < m; ++j) {
      const uint32_t choice = plan.by_expert.choices[plan.by_expert.starts[e] + j];
      plan.rows[choice] = static_cast<int32_t>(plan.gather.size());
      plan.gather.push_back(static_cast<int32_t>(choice / k));
      plan.row_expert.push_back(static_cast<int32_t>(e));
    }
  }
}

}  // namespace vks::vk
