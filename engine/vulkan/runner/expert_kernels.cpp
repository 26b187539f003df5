#include "engine/vulkan/runner/expert_kernels.h"

#include <string>

#include "engine/common/error.h"
#include "engine/vulkan/shaders/shader_params.h"

namespace vks::vk {

void record_moe_combine(CommandBuffer& cmd, KernelRegistry& kernels, const MoeCombineBindings& b,
                        const shader::MoeCombineParams& p) {
  if (p.n_tokens == 0 || p.cols == 0) return;
  const Kernel& k = kernels.get("moe_combine_f32");
  cmd.dispatch(k, {b.x, b.y, b.rows, b.weights}, p,
               Groups{static_cast<uint32_t>(ceil_div(p.cols, k.layout().local_size[0])), p.n_tokens, 1});
}

uint64_t moe_route_loop_iterations(uint32_t n_experts, uint32_t n_used) {
  return (uint64_t{n_used} + 2) * (uint64_t{n_experts} + 1) + 4 * (uint64_t{n_used} + 1);
}

void record_moe_route(CommandBuffer& cmd, KernelRegistry& kernels, const MoeRouteBindings& b,
                      const shader::MoeRouteParams& p) {
  if (p.n_tokens == 0) return;
  if (p.n_used == 0 || p.n_used > p.n_experts || p.logits_stride < p.n_experts) {
    throw Error(ErrorCode::kInvalidArgument, "moe_route: n_used must be in 1..n_experts and logits_stride >= n_experts");
  }
  if (moe_route_loop_iterations(p.n_experts, p.n_used) > VKS_LAVAPIPE_LOOP_BUDGET) {
    throw Error(ErrorCode::kUnsupported, "moe_route: " + std::to_string(p.n_used) + " of " + std::to_string(p.n_experts) +
                                             " experts exceed the device's loop budget");
  }
  const Kernel& k = kernels.get("moe_route_f32");
  cmd.dispatch(k, {b.logits, b.expert_scale, b.ids, b.weights}, p,
               Groups{static_cast<uint32_t>(ceil_div(p.n_tokens, k.layout().local_size[0])), 1, 1});
}

uint64_t moe_plan_loop_iterations(uint32_t n_choices, uint32_t n_experts, uint32_t max_slots) {
  const uint64_t rounds = ceil_div(n_experts, VKS_MOE_PLAN_WG);
  return rounds * (2 * (uint64_t{n_choices} + 1)) + 2 * rounds + 2 * (uint64_t{n_experts} + max_slots) + 2;
}

void record_moe_plan(CommandBuffer& cmd, KernelRegistry& kernels, const MoePlanBindings& b,
                     const shader::MoePlanParams& p) {
  if (p.n_choices == 0) return;
  if (p.n_experts > VKS_MOE_MAX_EXPERTS) {
    throw Error(ErrorCode::kUnsupported, "moe_plan: " + std::to_string(p.n_experts) + " experts (at most " +
                                             std::to_string(VKS_MOE_MAX_EXPERTS) + " on the device)");
  }
  if (moe_plan_loop_iterations(p.n_choices, p.n_experts, p.max_slots) > VKS_LAVAPIPE_LOOP_BUDGET) {
    throw Error(ErrorCode::kUnsupported, "moe_plan: " + std::to_string(p.n_choices) +
                                             " routed choices a step exceed the device's loop budget; lower max_step_tokens");
  }
  const Kernel& k = kernels.get("moe_plan_i32");
  cmd.dispatch(k, {b.ids, b.slots, b.gather, b.rows, b.row_expert}, p, Groups{1, 1, 1});
}

}  // namespace vks::vk
