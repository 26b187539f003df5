#version 450
// bias_add_f32: x[r][i] += bias[i] (qwen2's Q/K/V biases on the fused QKV rows), in place;
// grid x = ceil(cols / 64), y = n_rows. in_stride = out_stride = the row stride of x.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform PushBlock { ElementwiseParams p; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_WorkGroupID.y;
  if (i >= p.cols) return;
  x[r * p.in_stride + i] += bias[i];
}
