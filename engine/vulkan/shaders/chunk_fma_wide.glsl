// chunk_fma.glsl for the wide token tiles (16, 32 tokens) of lanes_body.glsl: the same fma chains
// in the same order (element ascending inside a chunk, one chain per (row, token)), looped token
// by token so that only one token's x is live at a time (chunk_fma.glsl keeps every token's x in
// registers, 256 of them at 32 tokens). Same scope and NORM_X as chunk_fma.glsl.
{
  const uint c = g * GROUP_CHUNKS + k;
  float wr[DOT_R * 8u];
  [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
    float wv[8];
    dequant(wg[r], k, wv);
    [[unroll]] for (uint i = 0u; i < 8u; ++i) wr[r * 8u + i] = wv[i];
  }
  [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
    vec4 x0 = xfetch((xb[t] >> 2) + x_vec_index(c, 0u));
    vec4 x1 = xfetch((xb[t] >> 2) + x_vec_index(c, 1u));
#ifdef NORM_X
    NORM_X(x0, t, x_vec_index(c, 0u));
    NORM_X(x1, t, x_vec_index(c, 1u));
#endif
    [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
      [[unroll]] for (uint i = 0u; i < 8u; ++i) {
        acc[r * DOT_T + t] = fma(wr[r * 8u + i], (i < 4u ? x0 : x1)[i & 3u], acc[r * DOT_T + t]);
      }
    }
  }
}
