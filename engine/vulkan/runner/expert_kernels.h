#pragma once
// Recording the expert block's own kernel (moe_combine_f32); the expert products themselves are
// the ordinary weight kernels over each expert's rows (see expert_plan.h).
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

}  // namespace vks::vk
