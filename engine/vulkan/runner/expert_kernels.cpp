#include "engine/vulkan/runner/expert_kernels.h"

namespace vks::vk {

void record_moe_combine(CommandBuffer& cmd, KernelRegistry& kernels, const MoeCombineBindings& b,
                        const shader::MoeCombineParams& p) {
  if (p.n_tokens == 0 || p.cols == 0) return;
  const Kernel& k = kernels.get("moe_combine_f32");
  cmd.dispatch(k, {b.x, b.y, b.rows, b.weights}, p,
               Groups{static_cast<uint32_t>(ceil_div(p.cols, k.layout().local_size[0])), p.n_tokens, 1});
}

}  // namespace vks::vk
