#pragma once
// Recording the expert block's own kernels (routing, grouping, combining); the expert products
// themselves are the weight kernels' mul_mat_id form (Ops::matmul_id, see expert_plan.h).
#include <cstdint>

#include "engine/vulkan/core/command.h"
#include "engine/vulkan/core/kernel.h"
#include "engine/vulkan/shaders/moe_params.h"

namespace vks::vk {

struct MoeCombineBindings {
  BufferView x;        // f32 [n_tokens][x_stride], added to
  BufferView y;        // f32 expert outputs, rows y_stride floats apart
  BufferView rows;     // int32 [n_tokens][n_used]: the y row of each (token, choice)
  BufferView weights;  // f32 [n_tokens][n_used]
};
// x[t] += sum over s of weights[t][s] * y[rows[t][s]], in slot order: one dispatch.
void record_moe_combine(CommandBuffer& cmd, KernelRegistry& kernels, const MoeCombineBindings& b,
                        const shader::MoeCombineParams& p);

// route_experts on the device for p.n_tokens tokens: ids (int32) and weights (f32) [n_tokens][n_used]
// from the logits ([n_tokens][logits_stride]); expert_scale (f32 [n_experts]) read when p.has_scale.
// One dispatch. Throws vks::Error(kUnsupported) past lavapipe's loop budget (moe_route_loop_iterations).
struct MoeRouteBindings {
  BufferView logits;
  BufferView expert_scale;  // any buffer when there is no scale (never read)
  BufferView ids;
  BufferView weights;
};
void record_moe_route(CommandBuffer& cmd, KernelRegistry& kernels, const MoeRouteBindings& b,
                      const shader::MoeRouteParams& p);
uint64_t moe_route_loop_iterations(uint32_t n_experts, uint32_t n_used);

// plan_experts' grouping on the device: from ids (int32 [n_choices]) the group slots (uint32
// [max_slots][4]: Ops::ExpertGroupTable's, VKS_MOE_SLOT_ROWS rows at most; max_slots from
// expert_plan_max_groups), gather and row_expert (by row) and rows (by choice).
// One dispatch of one workgroup. Throws vks::Error(kUnsupported) for more than VKS_MOE_MAX_EXPERTS
// experts or past lavapipe's loop budget (moe_plan_loop_iterations).
struct MoePlanBindings {
  BufferView ids;
  BufferView slots;
  BufferView gather;
  BufferView rows;
  BufferView row_expert;
};
void record_moe_plan(CommandBuffer& cmd, KernelRegistry& kernels, const MoePlanBindings& b,
                     const shader::MoePlanParams& p);
uint64_t moe_plan_loop_iterations(uint32_t n_choices, uint32_t n_experts, uint32_t max_slots);

}  // namespace vks::vk
