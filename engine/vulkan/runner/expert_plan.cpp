#include "engine/vulkan/runner/expert_plan.h"

#include <cstddef>
#include <numeric>

#include "engine/model/expert_routing.h"

namespace vks::vk {

uint32_t expert_plan_max_rows(uint32_t n_tokens, const FfnSpec& spec, uint32_t row_align) {
  return n_tokens * spec.n_used + spec.n_experts * (row_align - 1);
}

void plan_experts(const float* logits, uint32_t logits_stride, uint32_t n_tokens, const FfnSpec& spec,
                  uint32_t row_align, ExpertPlan& plan, const float* expert_scale) {
  const uint32_t k = spec.n_used;
  plan.rows.resize(std::size_t{n_tokens} * k);
  plan.weights.resize(std::size_t{n_tokens} * k);
  std::vector<int32_t> ids(std::size_t{n_tokens} * k);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    route_experts(logits + std::size_t{t} * logits_stride, spec, &ids[std::size_t{t} * k], &plan.weights[std::size_t{t} * k],
                  expert_scale);
  }
  group_by_expert(ids.data(), ids.size(), spec.n_experts, plan.by_expert);
  plan.groups.clear();
  plan.gather.clear();
  for (uint32_t e = 0; e < spec.n_experts; ++e) {
    const uint32_t m = plan.by_expert.count(e);
    if (m == 0) continue;
    plan.groups.push_back({e, static_cast<uint32_t>(plan.gather.size()), m});
    for (uint32_t j = 0; j < m; ++j) {
      const uint32_t choice = plan.by_expert.choices[plan.by_expert.starts[e] + j];
      plan.rows[choice] = static_cast<int32_t>(plan.gather.size());
      plan.gather.push_back(static_cast<int32_t>(choice / k));
    }
    while (plan.gather.size() % row_align != 0) plan.gather.push_back(-1);
  }
  plan.padded_rows = static_cast<uint32_t>(plan.gather.size());
}

uint32_t rows_for_alignment(uint64_t alignment, std::initializer_list<uint64_t> row_bytes) {
  uint64_t rows = 1;
  for (const uint64_t bytes : row_bytes) rows = std::lcm(rows, alignment / std::gcd(alignment, bytes));
  return static_cast<uint32_t>(rows);
}

}  // namespace vks::vk
