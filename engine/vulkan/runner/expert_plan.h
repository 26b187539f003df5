#pragma once
// How one step's tokens run an expert layer on the device. The runner reads the router's logits
// back, routes every token on the host (route_experts, the CPU path's function: the same choices
// on every backend) and groups the (token, choice) pairs by expert, so each expert in use is one
// group of consecutive rows and its weights are read once per step; one mul_mat_id dispatch per
// matrix (Ops::matmul_id) runs every group, finding each through the group slots.
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
  std::vector<uint32_t> slots;   // groups as Ops::ExpertGroupTable's slots: [groups][4] expert, first_row, n_rows, 0
  std::vector<int32_t> gather;   // [n_tokens * n_used] token whose normed input each row holds
  std::vector<int32_t> row_expert;  // [n_tokens * n_used] the expert of each row (bias_add_rows' ids)
  std::vector<int32_t> rows;     // [n_tokens][n_used] the row holding each (token, choice)'s output
  std::vector<float> weights;    // [n_tokens][n_used] the router's weight of each choice
  uint32_t max_group_rows = 0;   // rows of the largest group
  ExpertGroups by_expert;        // the grouping the rows follow (storage reused step to step)
};

// Rows the gathered buffers need for a step of n_tokens, and group slots (experts in use) at most.
uint32_t expert_plan_max_rows(uint32_t n_tokens, const FfnSpec& spec);
uint32_t expert_plan_max_groups(uint32_t n_tokens, const FfnSpec& spec);

// Routes n_tokens tokens from their logits (rows logits_stride floats apart) and lays out plan;
// expert_scale: route_experts'.
void plan_experts(const float* logits, uint32_t logits_stride, uint32_t n_tokens, const FfnSpec& spec,
                  ExpertPlan& plan, const float* expert_scale = nullptr);

}  // namespace vks::vk
