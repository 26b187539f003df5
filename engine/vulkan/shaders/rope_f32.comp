#version 450
// Rotary embedding as llama.cpp applies it (NORM and NEOX modes, optional frequency factors; see
// RopeParams). One invocation per pair; rows are tokens of the flattened batch, each with its own
// position.
#extension GL_GOOGLE_include_directive : require
#include "attn_params.h"

layout(local_size_x = VKS_ROPE_WG, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) buffer Data { float x[]; };              // [n_tokens][row_stride]
layout(std430, binding = 1) readonly buffer Positions { int positions[]; };  // [n_tokens]
layout(std430, binding = 2) readonly buffer Freqs { float freqs[]; };  // [rope_dim / 2], see RopeParams

layout(push_constant) uniform Push { RopeParams p; };

void main() {
  const uint pairs_per_head = p.rope_dim / 2;
  const uint pair = gl_GlobalInvocationID.x;
  const uint token = gl_GlobalInvocationID.y;
  if (pair >= p.n_heads * pairs_per_head || token >= p.n_tokens) return;
  const uint head = pair / pairs_per_head;
  const uint i = pair % pairs_per_head;

  // The same float operations as the CPU reference, so theta is the same number.
  const float theta = float(positions[token]) * freqs[i] * p.freq_scale;
  // Reduce to [-pi, pi] before sin/cos: Vulkan promises their precision only there, and NVIDIA's
  // error grew with the angle (normalized 6.6e-5 against the reference at positions up to 5000, on
  // an H100; lavapipe stayed under the test's 2e-5). Cody-Waite: 2*pi = C1 + C2 with C1 = 6.28125
  // exact in 8 bits, so k * C1 is exact for any k a position can give and the fma steps lose nothing.
  const float k = round(theta * 0.15915494309189535);
  float r = fma(-k, 6.28125, theta);
  r = fma(-k, 1.9353071795864769e-3, r);
  const float c = cos(r);
  const float s = sin(r);

  const uint head_at = token * p.row_stride + p.col_offset + head * p.head_dim;
  const uint at0 = head_at + (p.mode == VKS_ROPE_MODE_NEOX ? i : 2 * i);
  const uint at1 = at0 + (p.mode == VKS_ROPE_MODE_NEOX ? pairs_per_head : 1);
  const float x0 = x[at0];
  const float x1 = x[at1];
  x[at0] = x0 * c - x1 * s;
  x[at1] = x0 * s + x1 * c;
}
