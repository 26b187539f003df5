// Statements, not a function: the partial last chunk of an F32/F16 row (quantized rows are whole
// blocks of 32, so only float types have one), its missing x values read as zero and its padding
// weights zero. Included by matmul_body.glsl and lanes_body.glsl under their own condition.
// In scope: row[DOT_R], xb[DOT_T], acc[DOT_R * DOT_T]; NORM_X_SCALAR as in chunk_fma.glsl.
{
  const uint c = full_chunks();
  float xv[DOT_T * 8u];
  [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
      xv[t * 8u + i] = x_at_guarded(xb[t], c, i);
#ifdef NORM_X_SCALAR
      NORM_X_SCALAR(xv[t * 8u + i], t, x_index(c, i));
#endif
    }
  }
  [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
    float wv[8];
    dequant(load_group(row[r], c, load_side(row[r], 0u), 0u), 0u, wv);
    [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
      [[unroll]] for (uint i = 0u; i < 8u; ++i) acc[r * DOT_T + t] = fma(wv[i], xv[t * 8u + i], acc[r * DOT_T + t]);
    }
  }
}
