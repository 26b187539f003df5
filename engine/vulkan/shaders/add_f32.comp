#version 450
// add_f32: out[r][i] = a[r][i] + b[r][i]; grid x = ceil(cols / 64), y = n_rows.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) buffer Out { float outv[]; };
layout(push_constant) uniform PushBlock { ElementwiseParams p; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_WorkGroupID.y;
  if (i >= p.cols) return;
  outv[r * p.out_stride + i] = a[r * p.in_stride + i] + b[r * p.in_stride + i];
}
