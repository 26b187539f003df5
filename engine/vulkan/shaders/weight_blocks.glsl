// Block decoding of every device weight format (the layouts of engine/vulkan/kernels/device_format.h),
// shared by matvec_<type>, matmul_<type>, matlanes_<type> (common_matmul.glsl) and embed_<type>
// (embed_body.glsl).
//
// The includer defines one WTYPE_<type>, `uvec4 wfetch(uint i)` (texel i of one part of a
// DeviceMatrix) and a push-constant block `p` with cols, row_stride and d_offset, then includes
// this file. It gets:
//   GROUP_CHUNKS           chunks of 8 weights per group (a group: what one row loads at once)
//   WSide load_side(row, first_group)    the side record (scales, minimums, high bits) of groups
//                                        first_group .. first_group + 7 (first_group % 8 == 0)
//   WGroup load_group(row, g, side, j)   group g of the row (j = g - first_group)
//   void dequant(group, k, out float wv[8])   the 8 weights of chunk k of the group, exactly the
//                                             floats the CPU dequantization gives
//   uint x_index(c, i)     the element (column) that weight i of chunk c multiplies
// Elements x_index(c, 0..3) and x_index(c, 4..7) are each 4 consecutive, 4-aligned columns.
#include "halves.glsl"

float half_at(uint half_index) {
  const uint word = wfetch(half_index >> 3u)[(half_index >> 1u) & 3u];
  return unpack_halves((half_index & 1u) != 0u ? word >> 16 : word).x;
}

// Half j (0..7) of a uvec4 of 8 halves.
float half_from(uvec4 v, uint j) { return unpack_halves(v[j >> 1] >> ((j & 1u) * 16u)).x; }
// Byte i (0..15) of a uvec4, unsigned and sign-extended.
uint byte_u(uvec4 v, uint i) { return (v[i >> 2] >> ((i & 3u) * 8u)) & 255u; }
int byte_s(uvec4 v, uint i) { return int(v[i >> 2] << (24u - (i & 3u) * 8u)) >> 24; }

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
#if defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0) || defined(WTYPE_Q4_K) || defined(WTYPE_MXFP4) || defined(WTYPE_IQ4_NL) || \
    defined(WTYPE_IQ4_XS)
#define SIDE_UVEC4 1u
#elif defined(WTYPE_Q4_1) || defined(WTYPE_Q2_K) || defined(WTYPE_Q3_K)
#define SIDE_UVEC4 2u
#elif defined(WTYPE_Q5_0) || defined(WTYPE_Q5_K)
#define SIDE_UVEC4 3u
#elif defined(WTYPE_Q5_1)
#define SIDE_UVEC4 4u
#elif defined(WTYPE_Q6_K)
#define SIDE_UVEC4 6u
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
  [[unroll]] for (uint i = 0u; i < SIDE_UVEC4; ++i) s.v[i] = wfetch(base + i);
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
  return WGroup(wfetch(base), wfetch(base + 1u), vec4(1.0), uvec2(0u));
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
  return WGroup(wfetch((row * p.row_stride + g * 8u) >> 3), uvec4(0u), vec4(1.0), uvec2(0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const vec2 h = unpack_halves(wg.q0[i]);
    wv[2u * i] = h.x;
    wv[2u * i + 1u] = h.y;
  }
}
uint x_index(uint c, uint i) { return c * 8u + i; }
#elif defined(WTYPE_Q8_0)
// Q8_0: group = block g, 32 int8 quants (2 uvec4) in element order, one scale d (dm.x) for all 32;
// chunk k = bytes 8k .. 8k+7 = elements 8k .. 8k+7.
#define GROUP_CHUNKS 4u
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  const uint base = group_base(row, g, 2u);
  return WGroup(wfetch(base), wfetch(base + 1u), vec4(half_from(sd.v[0], j)), uvec2(0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uvec4 q = k < 2u ? wg.q0 : wg.q1;
  const float dl = wg.dm.x;
  [[unroll]] for (uint h = 0u; h < 2u; ++h) {
    const uint word = q[(k & 1u) * 2u + h];
    [[unroll]] for (uint b = 0u; b < 4u; ++b) wv[4u * h + b] = dl * float(int(word << (24u - 8u * b)) >> 24);
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
  return WGroup(wfetch(group_base(row, g, 1u)), uvec4(0u), vec4(half_from(sd.v[0], j)), uvec2(0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uint q = wg.q0[k];
  [[unroll]] for (uint b = 0u; b < 8u; ++b) wv[b] = wg.dm.x * float(nibble_s(q, b));
}
#elif defined(WTYPE_MXFP4)
// MXFP4: weight = doubled E2M1 value of the code * 2^(e - 128) (device_format.cpp convert_mxfp4:
// the codes as stored, except -0 stored as +0, and the 8 groups' exponent bytes e in the side
// record). The 8 magnitudes {0, 1, 2, 3, 4, 6, 8, 12} sit as nibbles in one constant, indexed by
// the code's low 3 bits: shifts and masks, not a lookup in an array, which lavapipe would put in
// memory. The sign (bit 3) picks -d or d; float(magnitude) * d is exact as the CPU's product.
const uint kMxfp4Magnitudes = 0xC8643210u;
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  const uint e = byte_u(sd.v[0], j);
  // 2^(e - 128), ggml's ggml_e8m0_to_fp32_half: e = 0, 1 are the subnormals 2^-128 and 2^-127.
  const float d = uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23);
  return WGroup(wfetch(group_base(row, g, 1u)), uvec4(0u), vec4(d, -d, 0.0, 0.0), uvec2(0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uint q = wg.q0[k];
  [[unroll]] for (uint b = 0u; b < 8u; ++b) {
    const uint code = nibble_u(q, b);
    const uint magnitude = (kMxfp4Magnitudes >> ((code & 7u) * 4u)) & 15u;
    wv[b] = (code > 7u ? wg.dm.y : wg.dm.x) * float(magnitude);
  }
}
#elif defined(WTYPE_IQ4_NL) || defined(WTYPE_IQ4_XS)
// IQ4_NL / IQ4_XS: weight = d * value(index), the 16 values ggml's kvalues_iq4nl (-127 .. 113) as
// the bytes of four constants, picked with selects and shifts (an array lookup lavapipe would put
// in memory). IQ4_NL's d is its block's half (side record as Q4_0's); IQ4_XS's is the super-block's
// half times its sub-block's scale ls - 32, a float product as the CPU's (device_format.cpp
// convert_iq4_xs: the 8 scales as int8, then d, in one uvec4).
int iq4_value(uint index) {
  const uint word = index < 8u ? (index < 4u ? 0xBFAD9881u : 0xF6EADDCFu) : (index < 12u ? 0x26190D01u : 0x71594535u);
  return int(word << (24u - 8u * (index & 3u))) >> 24;
}
WGroup load_group(uint row, uint g, WSide sd, uint j) {
#if defined(WTYPE_IQ4_NL)
  const float d = half_from(sd.v[0], j);
#else
  const float d = unpack_halves(sd.v[0].z).x * float(byte_s(sd.v[0], j));
#endif
  return WGroup(wfetch(group_base(row, g, 1u)), uvec4(0u), vec4(d), uvec2(0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uint q = wg.q0[k];
  [[unroll]] for (uint b = 0u; b < 8u; ++b) wv[b] = wg.dm.x * float(iq4_value(nibble_u(q, b)));
}
#else
// The element (0..31) of its group that slot b of chunk k holds.
uint group_elem(uint k, uint b) { return b < 4u ? 4u * k + b : 12u + 4u * k + b; }
// Word i (0..7) of two consecutive uvec4 a, b.
uint word_of(uvec4 a, uvec4 b, uint i) { return i < 4u ? a[i] : b[i - 4u]; }

#if defined(WTYPE_Q4_1) || defined(WTYPE_Q5_1)
// Q4_1 / Q5_1: weight = q * d + m (q * d is exact, so the one rounding is the CPU's).
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  const vec2 dm = unpack_halves(word_of(sd.v[0], sd.v[1], j));
#if defined(WTYPE_Q5_1)
  const uint qh = word_of(sd.v[2], sd.v[3], j);
#else
  const uint qh = 0u;
#endif
  return WGroup(wfetch(group_base(row, g, 1u)), uvec4(0u), vec4(dm, 0.0, 0.0), uvec2(qh, 0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uint q = wg.q0[k];
  [[unroll]] for (uint b = 0u; b < 8u; ++b) {
    const uint v = nibble_u(q, b) | (((wg.hi.x >> group_elem(k, b)) & 1u) << 4);
    wv[b] = float(v) * wg.dm.x + wg.dm.y;
  }
}
#elif defined(WTYPE_Q5_0)
// Q5_0: weight = (q - 16) * d, q = nibble | qh bit << 4.
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  return WGroup(wfetch(group_base(row, g, 1u)), uvec4(0u), vec4(half_from(sd.v[0], j)),
                uvec2(word_of(sd.v[1], sd.v[2], j), 0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uint q = wg.q0[k];
  [[unroll]] for (uint b = 0u; b < 8u; ++b) {
    const uint v = nibble_u(q, b) | (((wg.hi.x >> group_elem(k, b)) & 1u) << 4);
    wv[b] = float(int(v) - 16) * wg.dm.x;
  }
}
#elif defined(WTYPE_Q2_K) || defined(WTYPE_Q3_K)
// Sub-blocks of 16: slots 0..3 of a chunk (elements < 16) use dm.xy, slots 4..7 dm.zw.
#if defined(WTYPE_Q2_K)
// Q2_K: weight = (d * scale) * q - dmin * min, per sub-block scale | min << 4 bytes.
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  const vec2 dd = unpack_halves(sd.v[1].x);
  const uint lo = byte_u(sd.v[0], 2u * j), hi = byte_u(sd.v[0], 2u * j + 1u);
  return WGroup(wfetch(group_base(row, g, 1u)), uvec4(0u),
                vec4(dd.x * float(lo & 15u), dd.y * float(lo >> 4), dd.x * float(hi & 15u), dd.y * float(hi >> 4)),
                uvec2(0u));
}
#elif defined(WTYPE_Q3_K)
// Q3_K: weight = (d * scale) * q, q signed in -4..3, scale signed 6-bit.
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  const float d = unpack_halves(sd.v[1].x).x;
  return WGroup(wfetch(group_base(row, g, 1u)), uvec4(0u),
                vec4(d * float(byte_s(sd.v[0], 2u * j)), 0.0, d * float(byte_s(sd.v[0], 2u * j + 1u)), 0.0),
                uvec2(0u));
}
#endif
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uint q = wg.q0[k];
  [[unroll]] for (uint b = 0u; b < 8u; ++b) {
    const float dl = b < 4u ? wg.dm.x : wg.dm.z;
#if defined(WTYPE_Q2_K)
    const float ml = b < 4u ? wg.dm.y : wg.dm.w;
    wv[b] = dl * float(nibble_u(q, b)) - ml;
#else
    wv[b] = dl * float(nibble_s(q, b));
#endif
  }
}
#elif defined(WTYPE_Q6_K)
// Q6_K: weight = (d * scale) * (q - 32), as the CPU computes it. Side record: 16 int8 scales
// (sub-blocks of 16: dm.x for slots 0..3, dm.z for 4..7), per group a uvec2 of high bits laid out
// as device_format.cpp's convert_q6_k says (chunk c in word c / 2, each pair beside its nibble's
// byte position, upper bit flipped), then d.
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  const float d = unpack_halves(sd.v[5].x).x;
  // Selects, not sd.v[1u + (j >> 1)]: a dynamic index into the side array puts it in memory.
  const uvec4 pair = j < 4u ? (j < 2u ? sd.v[1] : sd.v[2]) : (j < 6u ? sd.v[3] : sd.v[4]);
  return WGroup(wfetch(group_base(row, g, 1u)), uvec4(0u),
                vec4(d * float(byte_s(sd.v[0], 2u * j)), 0.0, d * float(byte_s(sd.v[0], 2u * j + 1u)), 0.0),
                (j & 1u) != 0u ? pair.zw : pair.xy);
}
// Byte j of each word holds a whole 6-bit value (q XOR 32): four masks and shifts assemble the
// chunk's 8 values, then each is read as a signed 6-bit field, q - 32, in two shifts (lavapipe pays
// per instruction: the per-weight bit picking this replaced took about twice Q4_0's work).
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uint q = wg.q0[k];
  const uint h = (k < 2u ? wg.hi.x : wg.hi.y) >> (2u * (k & 1u));
  const uint low_slots = (q & 0x0F0F0F0Fu) | ((h & 0x03030303u) << 4);
  const uint high_slots = ((q >> 4) & 0x0F0F0F0Fu) | (h & 0x30303030u);
  [[unroll]] for (uint b = 0u; b < 8u; ++b) {
    const uint v = b < 4u ? low_slots : high_slots;
    wv[b] = (b < 4u ? wg.dm.x : wg.dm.z) * float(int(v << (26u - 8u * (b & 3u))) >> 26);
  }
}
#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
// Q4_K / Q5_K: weight = (d * scale) * q - dmin * min with ggml's get_scale_min_k4 on the header
// (d, dmin, scales[12]) in sd.v[0]; Q5_K adds a fifth bit per weight (one word per group).
WGroup load_group(uint row, uint g, WSide sd, uint j) {
  const uvec4 h = sd.v[0];
  const vec2 dd = unpack_halves(h.x);
  // Bytes 4+j, 8+j (j < 4) or 12+(j-4), j, 4+j (j >= 4) of the header, taken from fixed words
  // shifted by one amount instead of four byte_u(h, f(j)) with a group-dependent index: Q4_K gate/up matvecs
  // took 1.02-1.16x Q4_0's time with those and 0.94-1.06x with this (vks_bench_vulkan_versus
  // --profile on TinyLlama-shape Q4_K_M against Q4_0, three runs each).
  const uint shift = 8u * (j & 3u);
  const uint bytes_4_7 = h.y >> shift, bytes_8_11 = h.z >> shift, bytes_12_15 = h.w >> shift;
  uint sc, m;
  if (j < 4u) {
    sc = bytes_4_7 & 63u;
    m = bytes_8_11 & 63u;
  } else {
    sc = (bytes_12_15 & 15u) | (((bytes_4_7 >> 6) & 3u) << 4);
    m = ((bytes_12_15 >> 4) & 15u) | (((bytes_8_11 >> 6) & 3u) << 4);
  }
#if defined(WTYPE_Q5_K)
  const uint qh = word_of(sd.v[1], sd.v[2], j);
#else
  const uint qh = 0u;
#endif
  const float d1 = dd.x * float(sc);
  return WGroup(wfetch(group_base(row, g, 1u)), uvec4(0u), vec4(d1, dd.y * float(m), d1, 0.0), uvec2(qh, 0u));
}
void dequant(WGroup wg, uint k, out float wv[8]) {
  const uint q = wg.q0[k];
  [[unroll]] for (uint b = 0u; b < 8u; ++b) {
    const uint v = nibble_u(q, b) | (((wg.hi.x >> group_elem(k, b)) & 1u) << 4);
    wv[b] = wg.dm.x * float(v) - wg.dm.y;
  }
}
#else
#error "define the weight type"
#endif
#endif
#endif
