#pragma once
// The router of an expert layer: which experts a token runs and with what weights. One function
// for every backend (the Vulkan runner routes on the host too), so a token's choice is the same
// everywhere and independent of the batch it is in.
#include <cstdint>

#include "engine/model/layer_spec.h"

namespace vks {

// From one token's router logits [spec.n_experts], the spec.n_used chosen experts (ids, in
// descending order of their score; ties go to the lower id) and their weights, as llama.cpp's
// build_moe_ffn computes them for spec.routing.
void route_experts(const float* logits, const FfnSpec& spec, int32_t* ids, float* weights);

}  // namespace vks
