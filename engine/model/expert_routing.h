#pragma once
// The router of an expert layer: which experts a token runs and with what weights. One function
// for every backend (the Vulkan runner's moe_route_f32 does the same on the device), so a token's
// choice is the same everywhere and independent of the batch it is in.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/model/layer_spec.h"

namespace vks {

// From one token's router logits [spec.n_experts], the spec.n_used chosen experts (ids, in
// descending order of their score; ties go to the lower id) and their weights, as llama.cpp's
// build_moe_ffn computes them for spec.routing. expert_scale (spec.expert_scales: one scalar per
// expert that multiplies its output) is folded into the weights; null where there is none.
void route_experts(const float* logits, const FfnSpec& spec, int32_t* ids, float* weights,
                   const float* expert_scale = nullptr);

// A step's (token, choice) pairs grouped by expert, for running each expert in use once over its
// tokens: the choices of expert e are choices[starts[e] .. starts[e + 1]), each the index of a
// pair in the routed ids ([n_tokens][n_used]: token = index / n_used), ascending.
struct ExpertGroups {
  std::vector<uint32_t> starts;   // [n_experts + 1]
  std::vector<uint32_t> choices;  // [n_tokens * n_used]
  uint32_t count(uint32_t e) const { return starts[e + 1] - starts[e]; }
};
// One counting pass over ids (n values, each below n_experts), reusing groups' storage.
void group_by_expert(const int32_t* ids, size_t n, uint32_t n_experts, ExpertGroups& groups);

}  // namespace vks
