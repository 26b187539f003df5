#version 450
// scale_f32: x[r][i] *= value in place (ScalarMapParams); grid x = ceil(cols / 64), y = n_rows.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform PushBlock { ScalarMapParams p; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_WorkGroupID.y;
  if (i >= p.cols) return;
  x[r * p.stride + i] *= p.value;
}
