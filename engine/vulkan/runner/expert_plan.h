#pragma once
// How one step's tokens run an expert layer on the device. The runner reads the router's logits
// back, routes every token on the host (route_experts, the CPU path's function: the same choices
// on every backend) and groups the (token, choice) pairs by expert, so each expert in use is one
// product over its tokens' rows and its weights are read once per step. Each group starts at a
// row whose byte offset the device can bind as a storage buffer.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
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
  std::vector<int32_t> gather;   // [padded_rows] token whose normed input each row holds; -1: padding
  std::vector<int32_t> rows;     // [n_tokens][n_used] the row holding each (token, choice)'s output
  std::vector<float> weights;    // [n_tokens][n_used] the router's weight of each choice
  uint32_t padded_rows = 0;
  ExpertGroups by_expert;        // the grouping the rows follow (storage reused step to step)
};

// Rows the gathered buffers need for a step of n_tokens (every group padded to row_align).
uint32_t expert_plan_max_rows(uint32_t n_tokens, const FfnSpec& spec, uint32_t row_align);

// Routes n_tokens tokens from their logits (rows logits_stride floats apart) and lays out plan;
// row_align: groups start at multiples of it; expert_scale: route_experts'.
void plan_experts(const float* logits, uint32_t logits_stride, uint32_t n_tokens, const FfnSpec& spec,
                  uint32_t row_align, ExpertPlan& plan, const float* expert_scale = nullptr);

// The smallest number of rows r such that r * row_bytes is a multiple of alignment, for every one
// of the row sizes (their least common multiple).
uint32_t rows_for_alignment(uint64_t alignment, std::initializer_list<uint64_t> row_bytes);

}  // namespace vks::vk
