#version 450
// rmsnorm_f32: out[r] = x[r] * (1 / sqrt(mean(x[r]^2) + eps)) * weight, one workgroup per row
// (grid y) and sub-row (grid x: the heads of a per-head norm, head_stride floats apart).
// The sum of squares is reduced in a fixed order (row_sum_squares.glsl), so a row's result does not
// depend on the batch.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float weight[]; };
layout(std430, binding = 2) buffer Out { float outv[]; };
layout(push_constant) uniform PushBlock { RmsNormParams p; };

#include "row_sum_squares.glsl"

void main() {
  const uint row = gl_WorkGroupID.y;
  const uint head_at = gl_WorkGroupID.x * p.head_stride;
  const uint lid = gl_LocalInvocationID.x;
  const uint xb = row * p.x_stride + head_at;
  const float scale = 1.0 / sqrt(row_sum_squares(xb, p.dim) / float(p.dim) + p.eps);
  const uint ob = row * p.out_stride + head_at;
  for (uint j = lid; j < p.dim; j += 64u) outv[ob + j] = (x[xb + j] * scale) * weight[j];
}
