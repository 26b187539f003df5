#version 450
// moe_plan_i32: a step's routed choices grouped by expert on the device, as plan_experts
// (engine/vulkan/runner/expert_plan.cpp) groups them on the host: experts ascending, each group's
// rows consecutive and in choice order; the experts in use become the first group slots of
// Ops::matmul_id, VKS_MOE_SLOT_ROWS rows a slot, the rest of its max_slots empty. One workgroup:
// invocation i counts, then places, the choices of experts i, i + VKS_MOE_PLAN_WG, ...; invocation
// 0 lays out the slots between (moe_plan_loop_iterations counts the loops).
#extension GL_GOOGLE_include_directive : require
#include "moe_params.h"

layout(local_size_x = VKS_MOE_PLAN_WG) in;
layout(std430, binding = 0) readonly buffer Ids { int ids[]; };     // [n_choices]
layout(std430, binding = 1) writeonly buffer Slots { uvec4 slots[]; };  // [max_slots]
layout(std430, binding = 2) writeonly buffer Gather { int gather[]; };  // [n_choices] by row
layout(std430, binding = 3) writeonly buffer Rows { int rows[]; };      // [n_choices] by choice
layout(std430, binding = 4) writeonly buffer RowExpert { int row_expert[]; };  // [n_choices] by row
layout(push_constant) uniform PushBlock { MoePlanParams p; };

shared uint counts[VKS_MOE_MAX_EXPERTS];
shared uint starts[VKS_MOE_MAX_EXPERTS];

void main() {
  const uint lid = gl_LocalInvocationID.x;
  for (uint e = lid; e < p.n_experts; e += VKS_MOE_PLAN_WG) {
    uint c = 0u;
    for (uint i = 0u; i < p.n_choices; ++i) c += ids[i] == int(e) ? 1u : 0u;
    counts[e] = c;
  }
  barrier();
  if (lid == 0u) {
    uint row = 0u, used = 0u;
    for (uint e = 0u; e < p.n_experts; ++e) {
      starts[e] = row;
      for (uint r = 0u; r < counts[e]; r += VKS_MOE_SLOT_ROWS) {
        slots[used++] = uvec4(e, row + r, min(counts[e] - r, VKS_MOE_SLOT_ROWS), 0u);
      }
      row += counts[e];
    }
    for (uint s = used; s < p.max_slots; ++s) slots[s] = uvec4(0u);
  }
  barrier();
  for (uint e = lid; e < p.n_experts; e += VKS_MOE_PLAN_WG) {
    if (counts[e] == 0u) continue;
    uint row = starts[e];
    for (uint i = 0u; i < p.n_choices; ++i) {
      if (ids[i] != int(e)) continue;
      rows[i] = int(row);
      gather[row] = int(i / p.n_used);
      row_expert[row] = int(e);
      ++row;
    }
  }
}
