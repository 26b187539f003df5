#version 450
// argmax_f32: out[r] = index of the largest x[r][i] (smallest index on ties; NaN never wins over a
// number). One workgroup per row.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Out { int outv[]; };
layout(push_constant) uniform PushBlock { ReduceRowParams p; };

shared float best_v[64];
shared uint best_i[64];

void main() {
  const uint row = gl_WorkGroupID.x;
  const uint lid = gl_LocalInvocationID.x;
  const uint xb = row * p.x_stride;
  float bv = uintBitsToFloat(0xff800000u);
  uint bi = 0xffffffffu;
  for (uint j = lid; j < p.cols; j += 64u) {
    const float v = ordered_value(x[xb + j]);
    if (ranks_before(v, j, bv, bi)) { bv = v; bi = j; }
  }
  best_v[lid] = bv;
  best_i[lid] = bi;
  barrier();
  [[unroll]] for (uint step = 32u; step > 0u; step >>= 1) {
    if (lid < step && ranks_before(best_v[lid + step], best_i[lid + step], best_v[lid], best_i[lid])) {
      best_v[lid] = best_v[lid + step];
      best_i[lid] = best_i[lid + step];
    }
    barrier();
  }
  if (lid == 0u) outv[row] = best_i[0] == 0xffffffffu ? 0 : int(best_i[0]);
}
