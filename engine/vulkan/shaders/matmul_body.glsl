// Generates `void DOT_NAME(uint t0)`: the DOT_R rows of this invocation (row of slot s = group
// base + s * LOCAL_SIZE + local id) for tokens t0 .. t0 + DOT_T - 1. Included once per variant.
// Rows and tokens past the end compute copies of the last one and are not stored, so the loop
// has no control flow besides itself. With SWIGLU_EPILOGUE (see common_matmul.glsl) the first DOT_R / 2 slots
// take gate rows and the others the up rows of the same outputs, and the store combines them. Per group, each row's weights are loaded once (wide loads)
// and each chunk's x values once per token, shared by all DOT_R rows: on lavapipe each load
// instruction costs a per-lane loop while fma is cheap. The fma chain of every output is chunk
// ascending, element ascending, whatever DOT_R/DOT_T (batch invariance).
void DOT_NAME(uint t0) {
  float acc[DOT_R * DOT_T];
  [[unroll]] for (uint i = 0u; i < DOT_R * DOT_T; ++i) acc[i] = 0.0;
  const uint group = row_group();
  const uint group_base = group * (LOCAL_SIZE * slot_outputs(DOT_R)) + gl_LocalInvocationID.x;
  uint row[DOT_R];
  [[unroll]] for (uint r = 0u; r < DOT_R; ++r) row[r] = slot_row(group_base, r, DOT_R, LOCAL_SIZE);
  uint xb[DOT_T];  // first x element of each token (a multiple of 4)
  [[unroll]] for (uint t = 0u; t < DOT_T; ++t) xb[t] = min(t0 + t, wg_tokens - 1u) * p.x_stride;
  const uint n_groups = full_chunks() / GROUP_CHUNKS;
  // Super-groups of 8 groups: a few uvec4 loads bring the side record (scales, ...) of 8 groups.
  for (uint sg = 0u; sg < n_groups; sg += 8u) {
    WSide sd[DOT_R];
    [[unroll]] for (uint r = 0u; r < DOT_R; ++r) sd[r] = load_side(row[r], sg);
    const uint g_end = min(sg + 8u, n_groups);
    for (uint g = sg; g < g_end; ++g) {
      WGroup wg[DOT_R];
      [[unroll]] for (uint r = 0u; r < DOT_R; ++r) wg[r] = load_group(row[r], g, sd[r], g - sg);
      [[dont_unroll]] for (uint k = 0u; k < GROUP_CHUNKS; ++k) {
#include "chunk_fma.glsl"
      }
    }
  }
#if defined(WTYPE_F32) || defined(WTYPE_F16)
  if (has_tail_chunk()) {
#include "tail_chunk_fma.glsl"
  }
#endif
  if (SWIGLU_EPILOGUE != 0u) {
    [[unroll]] for (uint r = 0u; r < DOT_R / 2u; ++r) {
      const uint out_row = group_base + r * LOCAL_SIZE;
      [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
        store(out_row, t0 + t, silu_times(acc[r * DOT_T + t], acc[(r + DOT_R / 2u) * DOT_T + t]));
      }
    }
  } else {
    [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
      const uint out_row = group_base + r * LOCAL_SIZE;
      [[unroll]] for (uint t = 0u; t < DOT_T; ++t) store(out_row, t0 + t, acc[r * DOT_T + t]);
    }
  }
}
#undef DOT_NAME
#undef DOT_R
#undef DOT_T
