#version 450
// moe_route_f32: route_experts (engine/model/expert_routing.cpp) on the device, one invocation per
// token (grid x = ceil(n_tokens / 64)). The n_used experts of largest score, descending, ties to the
// lower id, as route_experts' partial sort orders them: pass j takes the best expert after pass
// j - 1's in that order, so nothing per expert is stored; scores (a softmax of the logits, or the
// logits) are recomputed each pass. Then the chosen weights softmaxed, normalized and scaled as
// route_experts does. Loop iterations: moe_route_loop_iterations (expert_kernels.cpp) counts them.
// exp() is the device's and the softmax sums float where route_experts sums double: weights agree
// to rounding, and choices exactly unless two scores round to a tie on one side only.
#extension GL_GOOGLE_include_directive : require
#include "moe_params.h"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) readonly buffer Scale { float expert_scale[]; };  // read when has_scale
layout(std430, binding = 2) buffer Ids { int ids[]; };
layout(std430, binding = 3) buffer W { float weights[]; };
layout(push_constant) uniform PushBlock { MoeRouteParams p; };

void main() {
  const uint t = gl_GlobalInvocationID.x;
  if (t >= p.n_tokens) return;
  const uint base = t * p.logits_stride;
  const uint out_base = t * p.n_used;
  float mx = logits[base];
  float scale = 1.0;
  if (p.softmax_first != 0u) {
    for (uint e = 1u; e < p.n_experts; ++e) mx = max(mx, logits[base + e]);
    float sum = 0.0;
    for (uint e = 0u; e < p.n_experts; ++e) sum += exp(logits[base + e] - mx);
    scale = 1.0 / sum;
  }
  int prev = -1;
  float prev_score = 0.0;
  for (uint j = 0u; j < p.n_used; ++j) {
    int best = -1;
    float best_score = 0.0;
    for (uint e = 0u; e < p.n_experts; ++e) {
      const float l = logits[base + e];
      const float s = p.softmax_first != 0u ? exp(l - mx) * scale : l;
      const bool after = prev < 0 || s < prev_score || (s == prev_score && int(e) > prev);
      if (after && (best < 0 || s > best_score)) {
        best = int(e);
        best_score = s;
      }
    }
    ids[out_base + j] = best;
    weights[out_base + j] = best_score;
    prev = best;
    prev_score = best_score;
  }
  if (p.softmax_after != 0u) {  // the first weight is the largest
    const float top = weights[out_base];
    float sum = 0.0;
    for (uint j = 0u; j < p.n_used; ++j) {
      const float v = exp(weights[out_base + j] - top);
      weights[out_base + j] = v;
      sum += v;
    }
    const float inv = 1.0 / sum;
    for (uint j = 0u; j < p.n_used; ++j) weights[out_base + j] *= inv;
  }
  if (p.normalize != 0u) {
    float sum = 0.0;
    for (uint j = 0u; j < p.n_used; ++j) sum += weights[out_base + j];
    for (uint j = 0u; j < p.n_used; ++j) weights[out_base + j] /= sum;
  }
  if (p.has_scale != 0u) {
    for (uint j = 0u; j < p.n_used; ++j) weights[out_base + j] *= expert_scale[uint(ids[out_base + j])];
  }
}
