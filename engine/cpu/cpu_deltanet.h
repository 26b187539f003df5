#pragma once
// The Gated DeltaNet mixer (Qwen3.5's linear-attention layers) of the CPU forward pass, token by
// token: each token advances its sequence's recurrent state (a causal depthwise conv over the
// q/k/v projection, then the delta rule per value head), so a token's values depend only on its
// sequence's earlier tokens, in order, whatever else the step holds and however a prompt is chunked.
// (The chunked form of the delta rule, faster for long prefills, is not implemented.)
#include "engine/cpu/cpu_layer.h"

namespace vks {

// a.proj = ssm_out(the DeltaNet of a.xb) for every token of a; kv gives each token's state.
void deltanet_mixer(const LlamaConfig& c, const DeltaNetSpec& d, const DeltaNetWeights& w, const CpuLayerVectors& lv,
                    CpuActivations& a, LayerKv& kv, ThreadPool* pool, MatmulFn matmul);

}  // namespace vks
