// Statements, not a function: the one definition of how a chunk of 8 weights meets x, included
// inside the chunk loop of matmul_body.glsl (rows family) and lanes_body.glsl (lanes family) so that
// both keep the same order inside a chunk (element ascending, one fma chain per output).
// In scope: k (chunk of the group), g (the group), wg[DOT_R] (the group of each row), xb[DOT_T]
// (first x element of each token), acc[DOT_R * DOT_T]. An includer may define NORM_X(v, t, texel):
// applied to each vec4 of x as loaded (token t, texel index of its columns in a token's row).
{
  const uint c = g * GROUP_CHUNKS + k;
  vec4 xv[DOT_T * 2u];
  [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
    xv[2u * t] = xfetch((xb[t] >> 2) + x_vec_index(c, 0u));
    xv[2u * t + 1u] = xfetch((xb[t] >> 2) + x_vec_index(c, 1u));
#ifdef NORM_X
    NORM_X(xv[2u * t], t, x_vec_index(c, 0u));
    NORM_X(xv[2u * t + 1u], t, x_vec_index(c, 1u));
#endif
  }
  [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
    float wv[8];
    dequant(wg[r], k, wv);
    [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
      [[unroll]] for (uint i = 0u; i < 8u; ++i) {
        acc[r * DOT_T + t] = fma(wv[i], xv[2u * t + (i >> 2)][i & 3u], acc[r * DOT_T + t]);
      }
    }
  }
}
