#pragma once
// How one step's tokens run an expert layer on the device, described on the host. The runner
// builds this plan on the device (moe_route_f32 routes as route_experts does, moe_plan_i32 groups:
// expert_kernels.h); plan_experts is the same plan computed here from the router's logits, the
// reference the device kernels are tested against. The (token, choice) pairs are grouped by expert,
// so each expert in use is one group of consecutive rows and its weights are read once per step;
// one mul_mat_id dispatch per matrix (Ops::matmul_id) runs every group, finding each through the
// group slots.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/model/expert_routing.h"
#include "engine/model/layer_spec.h"

namespace vks::vk {

struct ExpertPlan {
  struct Group {
    uint32_t expert = 0;
    uint32_t first_row = 0;  // its rows [first_row, first_row + n_rows) of the gathered buffers
    uint32_t n_rows = 0;
  };
  std::vector<Group> groups;     // the experts in use, by id
  // The groups as Ops::ExpertGroupTable's slots, each group cut into slots of at most
  // VKS_MOE_SLOT_ROWS rows: [slots][4] expert, first row, rows, 0.
  std::vector<uint32_t> slots;
  std::vector<int32_t> gather;   // [n_tokens * n_used] token whose normed input each row holds
  std::vector<int32_t> row_expert;  // [n_tokens * n_used] the expert of each row (bias_add_rows' ids)
  std::vector<int32_t> rows;     // [n_tokens][n_used] the row holding each (token, choice)'s output
  std::vector<float> weights;    // [n_tokens][n_used] the router's weight of each choice
  uint32_t max_group_rows = 0;   // rows of the largest group
  ExpertGroups by_expert;        // the grouping the rows follow (storage reused step to step)
};

// Rows the gathered buffers need for a step of n_tokens, and group slots at most (one per expert in
// use, one more for every VKS_MOE_SLOT_ROWS rows of a group).
uint32_t expert_plan_max_rows(uint32_t n_tokens, const FfnSpec& spec);
uint32_t expert_plan_max_groups(uint32_t n_tokens, const FfnSpec& spec);

// Routes n_tokens tokens from their logits (rows logits_stride floats apart) and lays out plan;
// expert_scale: route_experts'.
void plan_experts(const float* logits, uint32_t logits_stride, uint32_t n_tokens, const FfnSpec& spec,
                  ExpertPlan& plan, const float* expert_scale = nullptr);

}  // namespace vks::vk
