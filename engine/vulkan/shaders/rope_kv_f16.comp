#version 450
// Rotary embedding and the K/V cache write of one layer in one dispatch (see RopeKvParams). Rows
// are tokens of the flattened batch, each with its own position and slot. Invocation x of a row:
//  - x < n_q_heads * rope_dim/2: one rotated pair of a Q head, in place;
//  - then one per pair of adjacent K/V elements (2j, 2j+1): the two K elements rotated (each from
//    the unrotated row, with its rope partner) and packed as halves into the K pool at the token's
//    slot, the V pair into the V pool.
// K is rotated on its way into the cache, not in the row: nothing reads it there afterwards.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "attn_params.h"

layout(local_size_x = VKS_ROPE_KV_WG, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) buffer Data { float x[]; };                       // [n_tokens][row_stride]
layout(std430, binding = 1) readonly buffer Positions { int positions[]; };   // [n_tokens]
layout(std430, binding = 2) readonly buffer Freqs { float freqs[]; };         // [rope_dim / 2]
layout(std430, binding = 3) writeonly buffer KPool { uint k_pool[]; };        // [n_slots][kv_dim/2]
layout(std430, binding = 4) writeonly buffer VPool { uint v_pool[]; };        // [n_slots][kv_dim/2]
layout(std430, binding = 5) readonly buffer Slots { int slot_mapping[]; };    // [n_tokens]

layout(push_constant) uniform Push { RopeKvParams p; };
// The pools' VKS_KV_*: with a quantized pool, block mode (main_blocks): 8 invocations a block of
// VKS_KV_BLOCK values of K and of V (a block's scale needs all of them).
layout(constant_id = 0) const uint K_TYPE = VKS_KV_F16;
layout(constant_id = 1) const uint V_TYPE = VKS_KV_F16;
const bool BLOCKS = K_TYPE != VKS_KV_F16 || V_TYPE != VKS_KV_F16;
const bool NIBBLES = K_TYPE == VKS_KV_Q4_0 || V_TYPE == VKS_KV_Q4_0;

// cos and sin of pair i's angle at `pos`. The same float operations as the CPU reference, so theta
// is the same number. Reduced to [-pi, pi] before sin/cos: Vulkan promises their precision only
// there, and NVIDIA's error grew with the angle (normalized 6.6e-5 against the reference at
// positions up to 5000, on an H100; lavapipe stayed under the test's 2e-5). Cody-Waite: 2*pi = C1 +
// C2 with C1 = 6.28125 exact in 8 bits, so k * C1 is exact for any k a position can give and the
// fma steps lose nothing.
vec2 angle_cos_sin(int pos, uint i) {
  const float theta = float(pos) * freqs[i] * p.freq_scale;
  const float k = round(theta * 0.15915494309189535);
  float r = fma(-k, 6.28125, theta);
  r = fma(-k, 1.9353071795864769e-3, r);
  return vec2(cos(r), sin(r)) * (1.0 + p.mscale_extra);
}

// Pair i of the head at `head_at`: its two elements' indices (NORM: 2i, 2i+1; NEOX: i, i + rope_dim/2).
uvec2 pair_at(uint head_at, uint i) {
  const bool neox = p.mode == VKS_ROPE_MODE_NEOX;
  const uint at0 = head_at + (neox ? i : 2u * i);
  return uvec2(at0, at0 + (neox ? p.rope_dim / 2u : 1u));
}

// The pair (x0, x1) rotated by the angle whose cos and sin are cs.
vec2 rotate(float x0, float x1, vec2 cs) { return vec2(x0 * cs.x - x1 * cs.y, x0 * cs.y + x1 * cs.x); }

// Element d of the head at `head_at`, rotated (d < rope_dim) or as it is.
float rotated_element(uint head_at, uint d, int pos) {
  if (d >= p.rope_dim) return x[head_at + d];
  const uint half_rot = p.rope_dim / 2u;
  const uint i = p.mode == VKS_ROPE_MODE_NEOX ? (d < half_rot ? d : d - half_rot) : d / 2u;
  const uvec2 at = pair_at(head_at, i);
  const vec2 r = rotate(x[at.x], x[at.y], angle_cos_sin(pos, i));
  return at.x == head_at + d ? r.x : r.y;
}

// Block mode (a quantized pool): invocation id < kv_quads takes 4 consecutive values of the
// token's K and of its V (column 4 * id of the kv row), the rest rotate Q pairs. The 8 invocations of
// a block of 32 values are neighbours in one workgroup (the kv quads come first, from id 0, and a
// workgroup holds whole blocks), so the block's value of largest magnitude comes from their 8
// through shared memory, first of equals as llama.cpp's scan finds it. Then, with llama.cpp's
// quantize_row_q8_0 and quantize_row_q4_0 numbers:
//  - Q8_0: scale = max|v| / 127, values rounded half away from zero (roundf); each quad writes its
//    own word of int8 (or two of halves for an F16 pool beside it).
//  - Q4_0: scale = that value / -8, nibble = min(15, trunc(v / scale + 8.5)); a quad's 16 bits go
//    through shared memory and the even quad of each pair writes their word.
// The block's first quad writes the scale.
shared float k_peak[VKS_ROPE_KV_WG];
shared float v_peak[VKS_ROPE_KV_WG];
shared uint k_nibbles[VKS_ROPE_KV_WG];
shared uint v_nibbles[VKS_ROPE_KV_WG];

// The value of largest magnitude among v (the first of equals; 0 for none).
float peak(vec4 v) {
  float m = 0.0;
  [[unroll]] for (uint b = 0u; b < 4u; ++b) m = abs(m) < abs(v[b]) ? v[b] : m;
  return m;
}

// The same over the 8 quads of lid's block, in column order.
float block_peak(bool is_k, uint lid) {
  const uint first = lid & ~7u;
  float m = 0.0;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const float x = is_k ? k_peak[first + i] : v_peak[first + i];
    m = abs(m) < abs(x) ? x : m;
  }
  return m;
}

void store_word(bool is_k, uint at, uint word) {
  if (is_k) {
    k_pool[at] = word;
  } else {
    v_pool[at] = word;
  }
}

// The quad's word of int8 and (first quad of the block) the block's scale, into one pool.
void store_q8_quad(bool is_k, uint at, vec4 v, float peak_value, bool first_of_block) {
  const float d = abs(peak_value) / 127.0;
  const float id = d != 0.0 ? 1.0 / d : 0.0;
  uint word = 0u;
  [[unroll]] for (uint b = 0u; b < 4u; ++b) {
    const float q = v[b] * id;
    word |= (uint(int(sign(q) * floor(abs(q) + 0.5))) & 255u) << (8u * b);
  }
  store_word(is_k, at / 4u, word);
  if (first_of_block) store_word(is_k, (is_k ? p.k_scales_at : p.v_scales_at) + at / VKS_KV_BLOCK, floatBitsToUint(d));
}

// Q4_0's step for a block whose value of largest magnitude is peak_value (exact: -1/8 is a power
// of two, as llama.cpp's division by -8 is).
float q4_scale(float peak_value) { return peak_value * -0.125; }

// The quad's four nibbles (value b at bits 4b), as llama.cpp's quantize_row_q4_0 rounds them. The
// sum is `precise`: a fused multiply-add could round a value across a step edge.
uint q4_bits(vec4 v, float d) {
  const float id = d != 0.0 ? 1.0 / d : 0.0;
  uint bits = 0u;
  [[unroll]] for (uint b = 0u; b < 4u; ++b) {
    precise float t = v[b] * id + 8.5;
    bits |= uint(clamp(int(t), 0, 15)) << (4u * b);
  }
  return bits;
}

void main_blocks() {
  const uint token = gl_GlobalInvocationID.y;
  const uint id = gl_GlobalInvocationID.x;
  const uint lid = gl_LocalInvocationID.x;
  const uint kv_dim = p.n_kv_heads * p.head_dim;
  const uint kv_quads = kv_dim / 4u;
  const uint pairs_per_head = p.rope_dim / 2u;
  const bool in_batch = token < p.n_tokens;
  const int pos = in_batch ? positions[token] : 0;
  const uint row = token * p.row_stride;
  const bool is_kv = in_batch && id < kv_quads;
  vec4 k = vec4(0.0), v = vec4(0.0);
  const uint col = 4u * id;
  if (is_kv) {
    const uint k_head_at = row + p.k_offset + (col / p.head_dim) * p.head_dim;
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
      k[e] = rotated_element(k_head_at, col % p.head_dim + e, pos);
      v[e] = x[row + p.v_offset + col + e];
    }
  }
  k_peak[lid] = peak(k);
  v_peak[lid] = peak(v);
  barrier();  // every invocation of the workgroup: the block peaks are complete
  if (in_batch && id >= kv_quads && id < kv_quads + p.n_q_heads * pairs_per_head) {  // Q: one pair in place
    const uint j = id - kv_quads;
    const uint i = j % pairs_per_head;
    const uvec2 at = pair_at(row + p.q_offset + (j / pairs_per_head) * p.head_dim, i);
    const vec2 r = rotate(x[at.x], x[at.y], angle_cos_sin(pos, i));
    x[at.x] = r.x;
    x[at.y] = r.y;
  }
  const int slot = is_kv ? slot_mapping[token] : -1;
  // The runner validates slots; never write wild.
  const bool store = is_kv && slot >= 0 && uint(slot) < p.n_slots;
  const uint at = store ? uint(slot) * kv_dim + col : 0u;  // value index in the flattened [n_slots][kv_dim]
  const bool first_of_block = (lid & 7u) == 0u;
  const float k_block = block_peak(true, lid), v_block = block_peak(false, lid);
  if (K_TYPE == VKS_KV_Q4_0) k_nibbles[lid] = q4_bits(k, q4_scale(k_block));
  if (V_TYPE == VKS_KV_Q4_0) v_nibbles[lid] = q4_bits(v, q4_scale(v_block));
  if (store && K_TYPE == VKS_KV_Q8_0) store_q8_quad(true, at, k, k_block, first_of_block);
  if (store && V_TYPE == VKS_KV_Q8_0) store_q8_quad(false, at, v, v_block, first_of_block);
  if (store && K_TYPE == VKS_KV_F16) {
    k_pool[at / 2u] = packHalf2x16(k.xy);
    k_pool[at / 2u + 1u] = packHalf2x16(k.zw);
  }
  if (store && V_TYPE == VKS_KV_F16) {
    v_pool[at / 2u] = packHalf2x16(v.xy);
    v_pool[at / 2u + 1u] = packHalf2x16(v.zw);
  }
  if (!NIBBLES) return;
  barrier();  // every quad's nibbles are in shared memory (a specialization constant: uniform flow)
  if (!store || (lid & 1u) != 0u) return;  // the pair's neighbour is the same token's next quad
  if (K_TYPE == VKS_KV_Q4_0) {
    store_word(true, at / 8u, k_nibbles[lid] | (k_nibbles[lid + 1u] << 16u));
    if (first_of_block) store_word(true, p.k_scales_at + at / VKS_KV_BLOCK, floatBitsToUint(q4_scale(k_block)));
  }
  if (V_TYPE == VKS_KV_Q4_0) {
    store_word(false, at / 8u, v_nibbles[lid] | (v_nibbles[lid + 1u] << 16u));
    if (first_of_block) store_word(false, p.v_scales_at + at / VKS_KV_BLOCK, floatBitsToUint(q4_scale(v_block)));
  }
}

void main() {
  if (BLOCKS) {  // a specialization constant: the same branch for the whole workgroup
    main_blocks();
    return;
  }
  const uint token = gl_GlobalInvocationID.y;
  const uint id = gl_GlobalInvocationID.x;
  const uint pairs_per_head = p.rope_dim / 2u;
  const uint q_pairs = p.n_q_heads * pairs_per_head;
  const uint kv_pairs = p.n_kv_heads * p.head_dim / 2u;
  if (token >= p.n_tokens || id >= q_pairs + kv_pairs) return;
  const int pos = positions[token];
  const uint row = token * p.row_stride;

  if (id < q_pairs) {  // Q: rotate one pair in place
    const uint i = id % pairs_per_head;
    const uvec2 at = pair_at(row + p.q_offset + (id / pairs_per_head) * p.head_dim, i);
    const vec2 r = rotate(x[at.x], x[at.y], angle_cos_sin(pos, i));
    x[at.x] = r.x;
    x[at.y] = r.y;
    return;
  }
  const int slot = slot_mapping[token];
  if (slot < 0 || uint(slot) >= p.n_slots) return;  // the runner validates slots; never write wild
  const uint j = id - q_pairs;  // K/V elements 2j, 2j + 1 (one head: head_dim is even)
  const uint k_head_at = row + p.k_offset + (2u * j / p.head_dim) * p.head_dim;
  const uint d = 2u * j % p.head_dim;
  const uint dst = uint(slot) * kv_pairs + j;
  k_pool[dst] = packHalf2x16(vec2(rotated_element(k_head_at, d, pos), rotated_element(k_head_at, d + 1u, pos)));
  const uint v_at = row + p.v_offset + 2u * j;
  v_pool[dst] = packHalf2x16(vec2(x[v_at], x[v_at + 1u]));
}
