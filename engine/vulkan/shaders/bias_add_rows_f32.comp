#version 450
// bias_add_rows_f32: x[r][i] += bias[ids[r] * out_stride + i], in place: each row takes the bias row
// its id names (an expert's bias on the rows of the tokens that chose it: every expert in use in one
// dispatch). A row whose id is negative is left alone. grid x = ceil(cols / 64), y = n_rows;
// in_stride: the row stride of x, out_stride: that of the bias rows.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };
layout(std430, binding = 2) readonly buffer Ids { int ids[]; };
layout(push_constant) uniform PushBlock { ElementwiseParams p; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_WorkGroupID.y;
  const int id = ids[r];
  if (i >= p.cols || id < 0) return;
  x[r * p.in_stride + i] += bias[uint(id) * p.out_stride + i];
}
