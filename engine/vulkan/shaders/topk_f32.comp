#version 450
// topk_f32: the k largest values of each row with their indices, value descending then index
// ascending (NaN counts as -inf). One workgroup per row; k rounds, each picking the best element
// ranked strictly after the previous pick (k <= VKS_TOPK_MAX). VKS_TOPK_WG invocations share a row and
// each loop iteration takes VKS_TOPK_PER_STEP elements, so that k rounds over a whole vocabulary
// stay inside lavapipe's loop budget (see topk_loop_iterations).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = VKS_TOPK_WG) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer OutIdx { int out_idx[]; };
layout(std430, binding = 2) buffer OutVal { float out_val[]; };
layout(push_constant) uniform PushBlock { ReduceRowParams p; };

shared float best_v[VKS_TOPK_WG];
shared uint best_i[VKS_TOPK_WG];

void main() {
  const uint row = gl_WorkGroupID.x;
  const uint lid = gl_LocalInvocationID.x;
  const uint xb = row * p.x_stride;
  const float pos_inf = uintBitsToFloat(0x7f800000u);
  const float neg_inf = uintBitsToFloat(0xff800000u);
  float prev_v = pos_inf;
  uint prev_i = 0xffffffffu;  // nothing picked yet: every element ranks after (+inf, none)
  bool first = true;
  const uint k = min(p.k, min(p.cols, uint(VKS_TOPK_MAX)));
  for (uint round = 0u; round < k; ++round) {
    float bv = neg_inf;
    uint bi = 0xffffffffu;
    // Each iteration looks at VKS_TOPK_PER_STEP elements VKS_TOPK_WG apart: fewer loop iterations
    // for lavapipe's budget without a workgroup above the 128 invocations every device allows.
    for (uint base = lid; base < p.cols; base += uint(VKS_TOPK_WG * VKS_TOPK_PER_STEP)) {
      [[unroll]] for (uint e = 0u; e < uint(VKS_TOPK_PER_STEP); ++e) {
        const uint j = base + e * uint(VKS_TOPK_WG);
        if (j < p.cols) {
          const float v = ordered_value(x[xb + j]);
          const bool after_prev = first || ranks_before(prev_v, prev_i, v, j);
          if (after_prev && ranks_before(v, j, bv, bi)) { bv = v; bi = j; }
        }
      }
    }
    best_v[lid] = bv;
    best_i[lid] = bi;
    barrier();
    [[unroll]] for (uint step = uint(VKS_TOPK_WG) / 2u; step > 0u; step >>= 1) {
      if (lid < step && ranks_before(best_v[lid + step], best_i[lid + step], best_v[lid], best_i[lid])) {
        best_v[lid] = best_v[lid + step];
        best_i[lid] = best_i[lid + step];
      }
      barrier();
    }
    prev_v = best_v[0];
    prev_i = best_i[0];
    first = false;
    if (lid == 0u) {
      out_idx[row * p.k + round] = int(prev_i);
      out_val[row * p.k + round] = prev_v;
    }
    barrier();
  }
}
