#version 450
// The second half of attn_lanes_f16's parallel splits (p.split_count > 1): for each (head, token),
// merges the split states its workgroups stored, in ascending split order, and writes the output,
// with the same expressions (attn_split.glsl) a workgroup walking every split uses.
// Dispatch: (n_heads, n_tokens, 1), VKS_ATTN_LANES_WG invocations; specialized like attn_lanes_f16.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "attn_params.h"

layout(local_size_x = VKS_ATTN_LANES_WG, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer Partials { float partials[]; };  // [n_tokens][n_heads][split_count] records
layout(std430, binding = 1) readonly buffer Positions { int positions[]; };  // [n_tokens]
layout(std430, binding = 2) writeonly buffer Out { float out_rows[]; };      // [n_tokens][out_stride]
layout(std430, binding = 3) readonly buffer Sinks { float sinks[]; };        // [n_heads] (p.has_sinks)

layout(push_constant) uniform Push { AttnParams p; };

layout(constant_id = 0) const uint HALF_HD = 4;   // head_dim / 2
layout(constant_id = 1) const uint DIM_STEP = 4;  // unused here: the same specialization as attn_lanes_f16
const uint WG = VKS_ATTN_LANES_WG;
#include "attn_split.glsl"

void main() {
  const uint head = gl_WorkGroupID.x;
  const uint token = gl_WorkGroupID.y;
  const uint lid = gl_LocalInvocationID.x;
  const uint n_keys = uint(positions[token]) + 1u;
  const uint n_splits = split_count_of(n_keys - first_visible_key(n_keys));
  SplitState total = empty_split_state();
  for (uint split = 0u; split < n_splits; ++split) {
    const uint at = ((token * p.n_heads + head) * p.split_count + split) * split_record_floats();
    vec2 o[OWNED];
    [[unroll]] for (uint r = 0; r < OWNED; ++r) {
      const uint i = min(lid + r * WG, HALF_HD - 1u);  // pairs past the head repeat its last (never written)
      o[r] = vec2(partials[at + 2u + 2u * i], partials[at + 3u + 2u * i]);
    }
    merge_split(total, partials[at], partials[at + 1u], o);
  }
  write_output(total, token * p.out_stride + head * p.head_dim, lid, p.has_sinks != 0u ? sinks[head] : -1.0 / 0.0);
}
