// Statements, not a function: how one group of 32 weights meets x in the dot-product kernels
// (matdot_<type>), included in lanes_body.glsl's group loop in place of the chunk loop. x is Q8
// blocks (quantize_q8_f32.comp: per 32 values, int8 words 0..7, then the scale and the sums of the
// int8 values over elements 0..15 and 16..31), read as three texels per block.
// Each output gets one fma per group: acc = fma(group_sum, x's scale, acc). The integer parts are
// exact, so a token's outputs depend on nothing but its own x: the same bits in any batch or tile.
// In scope: g (the group), wg[DOT_R] (the group of each row), xb[DOT_T] (first word of each token's
// Q8 row), acc[DOT_R * DOT_T].
{
  uint w_lo[DOT_R][4], w_hi[DOT_R][4];
  [[unroll]] for (uint r = 0u; r < DOT_R; ++r) int8_words(wg[r], w_lo[r], w_hi[r]);
  [[unroll]] for (uint t = 0u; t < DOT_T; ++t) {
    const uint at = (xb[t] >> 2) + 3u * g;
    const uvec4 x_lo = xtexel(at), x_hi = xtexel(at + 1u), x_side = xtexel(at + 2u);
    const float x_scale = uintBitsToFloat(x_side.x);
    [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
      int dot_lo = 0, dot_hi = 0;
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        dot_lo += sdot4(w_lo[r][k], x_lo[k]);
        dot_hi += sdot4(w_hi[r][k], x_hi[k]);
      }
      acc[r * DOT_T + t] = fma(group_sum(wg[r], dot_lo, dot_hi, int(x_side.y), int(x_side.z)), x_scale, acc[r * DOT_T + t]);
    }
  }
}
