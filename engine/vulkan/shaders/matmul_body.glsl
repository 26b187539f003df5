// Generates `void DOT_NAME(uint first_slot, uint t0, uint nt)`: rows first_slot .. first_slot+DOT_R-1
// of this invocation (row of slot s = group base + s * LOCAL_SIZE + local id) for tokens
// t0 .. t0 + min(nt, DOT_T) - 1. Included several times with different DOT_NAME/DOT_R/DOT_T.
void DOT_NAME(uint first_slot, uint t0, uint nt) {
  float acc[DOT_R * DOT_T];
  [[unroll]] for (uint i = 0u; i < DOT_R * DOT_T; ++i) acc[i] = 0.0;
  const uint group_base = gl_WorkGroupID.x * (LOCAL_SIZE * ROW_SLOTS) + gl_LocalInvocationID.x;
  uint row[DOT_R];
  [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
    // Rows past the end compute a copy of the last row (no divergent exit before the loop).
    row[r] = min(group_base + (first_slot + r) * LOCAL_SIZE, p.rows - 1u);
  }
  const uint n_chunks = full_chunks();
  for (uint c = 0u; c < n_chunks; ++c) {
    [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
      float wv[8];
      load_chunk(row[r], c, wv);
      [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
        if (t < nt) {
          const uint xb = (t0 + t) * p.x_stride;
          [[unroll]] for (uint i = 0u; i < 8u; ++i) acc[r * DOT_T + t] = fma(wv[i], x_at(xb, c, i), acc[r * DOT_T + t]);
        }
      }
    }
  }
  if (has_tail_chunk()) {
    [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
      float wv[8];
      load_chunk(row[r], n_chunks, wv);
      [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
        if (t < nt) {
          const uint xb = (t0 + t) * p.x_stride;
          [[unroll]] for (uint i = 0u; i < 8u; ++i) {
            acc[r * DOT_T + t] = fma(wv[i], x_at_guarded(xb, n_chunks, i), acc[r * DOT_T + t]);
          }
        }
      }
    }
  }
  [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
    const uint out_row = group_base + (first_slot + r) * LOCAL_SIZE;
    [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
      if (t < nt) store(out_row, t0 + t, acc[r * DOT_T + t]);
    }
  }
}
#undef DOT_NAME
#undef DOT_R
#undef DOT_T
