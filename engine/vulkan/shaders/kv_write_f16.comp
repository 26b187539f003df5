#version 450
// Stores each token's K and V (f32 rows of the projection output) into the layer's paged F16
// pools at the token's slot (slot = block * block_size + offset). Layout: see attn_params.h.
#extension GL_GOOGLE_include_directive : require
#include "attn_params.h"

layout(local_size_x = VKS_KV_WRITE_WG, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer Src { float src[]; };          // [n_tokens][row_stride]
layout(std430, binding = 1) writeonly buffer KPool { uint k_pool[]; };     // [n_slots][kv_dim/2]
layout(std430, binding = 2) writeonly buffer VPool { uint v_pool[]; };     // [n_slots][kv_dim/2]
layout(std430, binding = 3) readonly buffer Slots { int slot_mapping[]; };  // [n_tokens]

layout(push_constant) uniform Push { KvWriteParams p; };

void main() {
  const uint pair = gl_GlobalInvocationID.x;
  const uint token = gl_GlobalInvocationID.y;
  const uint half_dim = p.kv_dim / 2;
  if (pair >= half_dim || token >= p.n_tokens) return;
  const int slot = slot_mapping[token];
  if (slot < 0 || uint(slot) >= p.n_slots) return;  // the runner validates slots; never write wild

  const uint row = token * p.row_stride;
  const uint dst = uint(slot) * half_dim + pair;
  k_pool[dst] = packHalf2x16(vec2(src[row + p.k_offset + 2 * pair], src[row + p.k_offset + 2 * pair + 1]));
  v_pool[dst] = packHalf2x16(vec2(src[row + p.v_offset + 2 * pair], src[row + p.v_offset + 2 * pair + 1]));
}
