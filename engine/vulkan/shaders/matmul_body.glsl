// Generates `void DOT_NAME(uint t0)`: the DOT_R rows of this invocation (row of slot s = group
// base + s * LOCAL_SIZE + local id) for tokens t0 .. t0 + DOT_T - 1. Included once per variant.
// Rows and tokens past the end compute copies of the last one and are not stored, so the loop
// has no control flow besides itself; the x values of a chunk are loaded once per token and used
// by all DOT_R rows (on lavapipe each load in a loop costs a per-lane loop, fma is cheap).
void DOT_NAME(uint t0) {
  float acc[DOT_R * DOT_T];
  [[unroll]] for (uint i = 0u; i < DOT_R * DOT_T; ++i) acc[i] = 0.0;
  const uint group_base = gl_WorkGroupID.x * (LOCAL_SIZE * ROW_SLOTS) + gl_LocalInvocationID.x;
  uint row[DOT_R];
  [[unroll]] for (uint r = 0u; r < DOT_R; ++r) row[r] = min(group_base + r * LOCAL_SIZE, p.rows - 1u);
  uint xb[DOT_T];
  [[unroll]] for (uint t = 0u; t < DOT_T; ++t) xb[t] = min(t0 + t, p.n_tokens - 1u) * p.x_stride;
  const uint n_chunks = full_chunks();
  for (uint c = 0u; c < n_chunks; ++c) {
    float xv[DOT_T * 8u];
    [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
      [[unroll]] for (uint i = 0u; i < 8u; ++i) xv[t * 8u + i] = x_at(xb[t], c, i);
    }
    [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
      float wv[8];
      load_chunk(row[r], c, wv);
      [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
        [[unroll]] for (uint i = 0u; i < 8u; ++i) acc[r * DOT_T + t] = fma(wv[i], xv[t * 8u + i], acc[r * DOT_T + t]);
      }
    }
  }
#if defined(WTYPE_F32) || defined(WTYPE_F16)
  // Quantized rows are whole blocks of 32, so only float types have a partial last chunk.
  if (has_tail_chunk()) {
    float xv[DOT_T * 8u];
    [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
      [[unroll]] for (uint i = 0u; i < 8u; ++i) xv[t * 8u + i] = x_at_guarded(xb[t], n_chunks, i);
    }
    [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
      float wv[8];
      load_chunk(row[r], n_chunks, wv);
      [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
        [[unroll]] for (uint i = 0u; i < 8u; ++i) acc[r * DOT_T + t] = fma(wv[i], xv[t * 8u + i], acc[r * DOT_T + t]);
      }
    }
  }
#endif
  [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
    const uint out_row = group_base + r * LOCAL_SIZE;
    [[unroll]] for (uint t = 0u; t < DOT_T; ++t) store(out_row, t0 + t, acc[r * DOT_T + t]);
  }
}
#undef DOT_NAME
#undef DOT_R
#undef DOT_T
