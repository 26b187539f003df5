// Block decoding of every device weight format (the layouts of engine/vulkan/kernels/device_format.h),
// shared by matvec_<type>, matmul_<type> (common_matmul.glsl) and embed_<type> (embed_body.glsl).
//
// The includer defines one WTYPE_<type>, declares `w4` (uvec4[], one part of a DeviceMatrix) and a
// push-constant block `p` with cols, row_stride and d_offset, then includes this file. It gets:
//   GROUP_CHUNKS           chunks of 8 weights per group (a group: what one row loads at once)
//   WSide load_side(row, first_group)    the side record (scales, minimums, high bits) of groups
//                                        first_group .. first_group + 7 (first_group % 8 == 0)
//   WGroup load_group(row, g, side, j)   group g of the row (j = g - first_group)
//   void dequant(group, k, out float wv[8])   the 8 weights of chunk k of the group, exactly the
//                                             floats the CPU dequantization gives
//   uint x_index(c, i)     the element (column) that weight i of chunk c multiplies
// Elements x_index(c, 0..3) and x_index(c, 4..7) are each 4 consecutive, 4-aligned columns.

float half_at(uint half_index) {
  const uint word = w4[half_index >> 3u][(half_index >> 1u) & 3u];
  return unpackHalf2x16((half_index & 1u) != 0u ? word >> 16 : word).x;
}

// Half j (0..7) of a uvec4 of 8 halves.
float half_from(uvec4 v, uint j) { return unpackHalf2x16(v[j >> 1] >> ((j & 1u) * 16u)).x; }

// A group as loaded: up to two uvec4 of quants, the scales it needs as floats and extra bits.
struct WGroup {
  uvec4 q0;
  uvec4 q1;
  vec4 dm;   // per-type: scales / minimums of the group's (sub-)blocks
  uvec2 hi;  // per-type: high bits of the group's quants
};

#if defined(WTYPE_F32) || defined(WTYPE_F16)
#define SIDE_UVEC4 1u
#else
// Side record sizes in uvec4 per 256 weights (device_format.cpp side_uvec4).
#if defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0)
#define SIDE_UVEC4 1u
#endif
#endif

struct WSide {
  uvec4 v[SIDE_UVEC4];
};

#if defined(WTYPE_F32) || defined(WTYPE_F16)
WSide load_side(uint row, uint first_group) { return WSide(uvec4[SIDE_UVEC4](uvec4(0u))); }
#else
// Side records of a row: ceil(cols / 256) of SIDE_UVEC4 uvec4 each, after the quant plane.
WSide load_side(uint row, uint first_group) {
  const uint base = (p.d_offset >> 2) + row * (((p.cols + 255u) >> 8) * SIDE_UVEC4) + (first_group >> 3) * SIDE_UVEC4;
  WSide s;
  [[unroll]] for (uint i = 0u; i < SIDE_UVEC4; ++i) s.v[i] = w4[base + i];
  return s;
}
#endif

// Quant-plane uvec4 index of group g of a row (blocked formats).
uint group_base(uint row, uint g, uint uvec4_per_group) { return (row * p.row_stride >> 2) + g * uvec4_per_group; }

#if defined(WTYPE_F32)
// Group = chunk c: elements 8c .. 8c+7 (rows zero-padded to a multiple of 8 floats).
#define GROUP_CHUNKS 1u
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  const uint base = (row * p.row_stride + g * 8u) >> 2;
  return WGroup(w4[base], w4[base + 1u], vec4(1.0), uvec2(0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    wv[i] = uintBitsToFloat(wg.q0[i]);
    wv[4u + i] = uintBitsToFloat(wg.q1[i]);
  }
}
uint x_index(uint c, uint i) { return c * 8u + i; }
#elif defined(WTYPE_F16)
// Group = chunk c: elements 8c .. 8c+7 (rows zero-padded to a multiple of 8 halves).
#define GROUP_CHUNKS 1u
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  return WGroup(w4[(row * p.row_stride + g * 8u) >> 3], uvec4(0u), vec4(1.0), uvec2(0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const vec2 h = unpackHalf2x16(wg.q0[i]);
    wv[2u * i] = h.x;
    wv[2u * i + 1u] = h.y;
  }
}
uint x_index(uint c, uint i) { return c * 8u + i; }
#elif defined(WTYPE_Q8_0)
// Group = block g (32 int8 quants, 2 uvec4); chunk k of it: bytes 8k .. 8k+7 = elements 8k .. 8k+7.
#define GROUP_CHUNKS 4u
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  const uint base = group_base(row, g, 2u);
  return WGroup(w4[base], w4[base + 1u], vec4(half_from(sd.v[0], j)), uvec2(0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uvec4 q = k < 2u ? wg.q0 : wg.q1;
  [[unroll]] for (uint h = 0u; h < 2u; ++h) {
    const uint word = q[(k & 1u) * 2u + h];
    [[unroll]] for (uint b = 0u; b < 4u; ++b) wv[4u * h + b] = wg.dm.x * float(int(word << (24u - 8u * b)) >> 24);
  }
}
uint x_index(uint c, uint i) { return c * 8u + i; }
#else
// The 4-bit formats: group = 32 weights in one uvec4 of nibbles in Q4_0 order. Chunk k of it is
// word k (bytes 4k..4k+3): elements 4k..4k+3 (low nibbles) then 16+4k .. 16+4k+3 (high nibbles).
#define GROUP_CHUNKS 4u
uint x_index(uint c, uint i) { return (c >> 2) * 32u + (c & 3u) * 4u + (i < 4u ? i : 12u + i); }
// Nibble b (0..3 low nibbles, 4..7 high nibbles) of word q, as unsigned and as signed 4-bit values.
uint nibble_u(uint q, uint b) { return (q >> ((b & 3u) * 8u + (b >> 2) * 4u)) & 15u; }
int nibble_s(uint q, uint b) { return int(q << (28u - (b & 3u) * 8u - (b >> 2) * 4u)) >> 28; }

#if defined(WTYPE_Q4_0)
// Q4_0: nibbles stored XOR 8, i.e. as signed q - 8; weight = d * (q - 8).
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  return WGroup(w4[group_base(row, g, 1u)], uvec4(0u), vec4(half_from(sd.v[0], j)), uvec2(0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uint q = wg.q0[k];
  [[unroll]] for (uint b = 0u; b < 8u; ++b) wv[b] = wg.dm.x * float(nibble_s(q, b));
}
#else
#error "define the weight type"
#endif
#endif
