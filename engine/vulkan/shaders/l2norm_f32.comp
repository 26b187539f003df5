#version 450
// l2norm_f32: out[r] = x[r] / max(sqrt(sum(x[r]^2)), eps), as ggml_l2_norm (the Gated DeltaNet's
// q and k heads); RmsNormParams (the weight is unused), one workgroup per row (grid y) and sub-row
// (grid x: heads, head_stride floats apart). The sum is reduced in the fixed order of rmsnorm_f32,
// so a row's result does not depend on the batch.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Out { float outv[]; };
layout(push_constant) uniform PushBlock { RmsNormParams p; };

#include "row_sum_squares.glsl"

void main() {
  const uint row = gl_WorkGroupID.y;
  const uint head_at = gl_WorkGroupID.x * p.head_stride;
  const uint lid = gl_LocalInvocationID.x;
  const uint xb = row * p.x_stride + head_at;
  const float scale = 1.0 / max(sqrt(row_sum_squares(xb, p.dim)), p.eps);
  const uint ob = row * p.out_stride + head_at;
  for (uint j = lid; j < p.dim; j += 64u) outv[ob + j] = x[xb + j] * scale;
}
