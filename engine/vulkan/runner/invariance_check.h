#pragma once
// The start-up self-test of batch invariance (issue 35): the Vulkan spec does not promise that one
// driver compiles the differently tiled code paths of a weight kernel (a token alone, in a tile of
// 8, in a wide tile) to the same arithmetic, and a GPU driver may contract or reorder where lavapipe
// does not. Each family's kernels are written to give a token the same bits in any batch (the
// kernel tests check it on lavapipe); this checks it on the device a runner starts on, for the
// weight formats its model uses, on a small matrix, before any request.
#include <set>
#include <string>

#include "engine/gguf/ggml_type.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/kernel.h"
#include "engine/vulkan/kernels/ops.h"

namespace vks::vk {

// "" when the family's product of a 16 x 256 matrix of `type` (fixed pseudo-random weights and x)
// gives tokens 0, batch / 2 and batch - 1 of a batch of `batch` the same bits alone; else what
// differed (for the log). Builds the plain product's pipeline for the type where it is not built.
std::string batch_invariance_mismatch(const Device& device, KernelRegistry& kernels, MatmulFamily family,
                                      uint32_t lanes_wide_tile, GgmlType type, uint32_t batch);

// The family to run: `chosen` where every type passes the check above, else the first of the
// fallbacks (dot where the device has integer dot products, then lanes, then rows; never `chosen`
// again) that passes, each failure logged; `chosen` (logged as an error) when none does. `forced`:
// the user named the family, which is then kept and only a warning is logged.
MatmulFamily settle_matmul_family(const Device& device, KernelRegistry& kernels, MatmulFamily chosen, bool forced,
                                  uint32_t lanes_wide_tile, const std::set<GgmlType>& types, uint32_t batch);

}  // namespace vks::vk
