// A weight group (weight_blocks.glsl: 32 weights) as int8 for the dot-product kernels (matdot_<type>,
// Ops' MatmulFamily::kDot), included after weight_blocks.glsl. It gives
//   void int8_words(WGroup wg, out uint lo[4], out uint hi[4])
//       the group's integer values as packed int8: lo[k] holds elements 4k .. 4k+3, hi[k] elements
//       16+4k .. 16+4k+3 (the element order of a Q8 x block's words k and 4+k, quantize_q8_f32.comp)
//   float group_sum(WGroup wg, int dot_lo, int dot_hi, int x_lo, int x_hi)
//       sum of weight * x over the group in units of x's scale, from the integer dot products of
//       the halves (dot_lo: elements 0..15, dot_hi: 16..31) and the sums of x's int8 values over
//       them (x_lo, x_hi): what an offset or a minimum in the weight's formula multiplies.
// The integers are exact, so only group_sum's few float operations round, in one fixed order
// (explicit fma: no contraction left to the compiler). Types whose integer value is q - offset take
// the unsigned q and subtract offset * sum(x), as llama.cpp's q8_1 products do.

// Bits 0..3 of b as bit 0 of bytes 0..3 (the four copies b << 0, 7, 14, 21 do not overlap).
uint spread4(uint b) { return (b * 0x00204081u) & 0x01010101u; }
// The fifth bits of a group's elements 4k .. 4k+3 (lo) and 16+4k .. (hi) at bit 4 of each byte:
// bit e of high_bits is element e's (weight_blocks.glsl's group_elem order).
uint fifth_bits(uint high_bits, uint first) { return spread4((high_bits >> first) & 15u) << 4; }

#if defined(WTYPE_Q8_0)
void int8_words(WGroup wg, out uint lo[4], out uint hi[4]) {
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    lo[k] = wg.q0[k];
    hi[k] = wg.q1[k];
  }
}
float group_sum(WGroup wg, int dot_lo, int dot_hi, int x_lo, int x_hi) { return wg.dm.x * float(dot_lo + dot_hi); }
#elif defined(WTYPE_MXFP4) || defined(WTYPE_IQ4_NL) || defined(WTYPE_IQ4_XS)
// Looked-up values: each nibble's signed value (MXFP4: the doubled E2M1 value, -12 .. 12; IQ4:
// -127 .. 113) as a byte.
int int8_value(uint code) {
#if defined(WTYPE_MXFP4)
  const int magnitude = int((kMxfp4Magnitudes >> ((code & 7u) * 4u)) & 15u);
  return code > 7u ? -magnitude : magnitude;
#else
  return iq4_value(code);
#endif
}
uint looked_up_word(uint q, uint shift) {
  uint w = 0u;
  [[unroll]] for (uint b = 0u; b < 4u; ++b) w |= (uint(int8_value((q >> (8u * b + shift)) & 15u)) & 255u) << (8u * b);
  return w;
}
void int8_words(WGroup wg, out uint lo[4], out uint hi[4]) {
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    lo[k] = looked_up_word(wg.q0[k], 0u);
    hi[k] = looked_up_word(wg.q0[k], 4u);
  }
}
float group_sum(WGroup wg, int dot_lo, int dot_hi, int x_lo, int x_hi) { return wg.dm.x * float(dot_lo + dot_hi); }
#elif defined(WTYPE_Q6_K)
// Each byte of a chunk's slots is q XOR 32 (weight_blocks.glsl): XOR again gives q in 0..63.
void int8_words(WGroup wg, out uint lo[4], out uint hi[4]) {
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    const uint q = wg.q0[k];
    const uint h = (k < 2u ? wg.hi.x : wg.hi.y) >> (2u * (k & 1u));
    lo[k] = ((q & 0x0F0F0F0Fu) | ((h & 0x03030303u) << 4)) ^ 0x20202020u;
    hi[k] = (((q >> 4) & 0x0F0F0F0Fu) | (h & 0x30303030u)) ^ 0x20202020u;
  }
}
float group_sum(WGroup wg, int dot_lo, int dot_hi, int x_lo, int x_hi) {
  return fma(wg.dm.x, float(dot_lo - 32 * x_lo), wg.dm.z * float(dot_hi - 32 * x_hi));
}
#else
// The nibble formats: low nibbles of word k are elements 4k .. 4k+3, high nibbles 16+4k ..;
// Q4_0 and Q3_K store signed values XOR 8 (XOR again: q + 8, unsigned); the five-bit formats add
// their fifth bits.
void int8_words(WGroup wg, out uint lo[4], out uint hi[4]) {
#if defined(WTYPE_Q4_0) || defined(WTYPE_Q3_K)
  const uint flip = 0x08080808u;
#else
  const uint flip = 0u;
#endif
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    lo[k] = (wg.q0[k] & 0x0F0F0F0Fu) ^ flip;
    hi[k] = ((wg.q0[k] >> 4) & 0x0F0F0F0Fu) ^ flip;
#if defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1) || defined(WTYPE_Q5_K)
    lo[k] |= fifth_bits(wg.hi.x, 4u * k);
    hi[k] |= fifth_bits(wg.hi.x, 16u + 4u * k);
#endif
  }
}
float group_sum(WGroup wg, int dot_lo, int dot_hi, int x_lo, int x_hi) {
#if defined(WTYPE_Q4_0)
  return wg.dm.x * float(dot_lo + dot_hi - 8 * (x_lo + x_hi));
#elif defined(WTYPE_Q5_0)
  return wg.dm.x * float(dot_lo + dot_hi - 16 * (x_lo + x_hi));
#elif defined(WTYPE_Q4_1) || defined(WTYPE_Q5_1)
  return fma(wg.dm.x, float(dot_lo + dot_hi), wg.dm.y * float(x_lo + x_hi));  // d * q + m
#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
  return fma(wg.dm.x, float(dot_lo + dot_hi), -(wg.dm.y * float(x_lo + x_hi)));  // (d * scale) * q - dmin * min
#elif defined(WTYPE_Q2_K)
  // Sub-blocks of 16: (dl, ml) = dm.xy for elements 0..15, dm.zw for 16..31.
  return fma(wg.dm.x, float(dot_lo), fma(wg.dm.z, float(dot_hi), -fma(wg.dm.y, float(x_lo), wg.dm.w * float(x_hi))));
#elif defined(WTYPE_Q3_K)
  return fma(wg.dm.x, float(dot_lo - 8 * x_lo), wg.dm.z * float(dot_hi - 8 * x_hi));
#else
#error "no int8 form for this weight type"
#endif
}
#endif
