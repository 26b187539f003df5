#version 450
// geglu_f32: out[r][i] = gelu(gate[r][i]) * up[r][i] (tanh GELU); grid x = ceil(cols / 64), y = n_rows.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "swiglu.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Gate { float gate[]; };
layout(std430, binding = 1) readonly buffer Up { float up[]; };
layout(std430, binding = 2) buffer Out { float outv[]; };
layout(push_constant) uniform PushBlock { ElementwiseParams p; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_WorkGroupID.y;
  if (i >= p.cols) return;
  const float g = gate[r * p.in_stride + i];
  outv[r * p.out_stride + i] = gelu_times(g, up[r * p.in_stride + i]);
}
