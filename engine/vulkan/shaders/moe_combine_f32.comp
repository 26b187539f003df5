#version 450
// moe_combine_f32: the residual add of an expert block. Token t (grid y) adds to x[t] its experts'
// outputs weighted by the router, the products summed in slot order (w0 y0 + w1 y1 + ..., as
// llama.cpp adds them), so a token's sum does not depend on the batch. Grid x = ceil(cols / 64).
#extension GL_GOOGLE_include_directive : require
#include "moe_params.h"

layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Y { float y[]; };
layout(std430, binding = 2) readonly buffer Rows { int rows[]; };
layout(std430, binding = 3) readonly buffer W { float w[]; };
layout(push_constant) uniform PushBlock { MoeCombineParams p; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint t = gl_WorkGroupID.y;
  if (i >= p.cols) return;
  const uint base = t * p.n_used;
  float sum = w[base] * y[uint(rows[base]) * p.y_stride + i];
  for (uint s = 1; s < p.n_used; ++s) sum += w[base + s] * y[uint(rows[base + s]) * p.y_stride + i];
  x[t * p.x_stride + i] += sum;
}
