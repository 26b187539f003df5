#version 450
// sigmoid_gate_f32: x[r][i] *= sigmoid(gate[r][i]), or sigmoid(gate[r][0]) for every i where the
// gate is one value a row (broadcast): attention's gated output, the shared expert's gate.
// Grid x = ceil(cols / 64), y = n_rows.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Gate { float gate[]; };
layout(push_constant) uniform PushBlock { SigmoidGateParams p; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_WorkGroupID.y;
  if (i >= p.cols) return;
  const float g = gate[r * p.gate_stride + (p.broadcast != 0u ? 0u : i)];
  x[r * p.x_stride + i] *= 1.0 / (1.0 + exp(-g));
}
