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
// The pools' VKS_KV_*: with a Q8_0 pool, an invocation per VKS_KV_Q8_BLOCK values of K and of V
// (a block's scale needs all of them), writing each pool in its type.
layout(constant_id = 0) const uint K_TYPE = VKS_KV_F16;
layout(constant_id = 1) const uint V_TYPE = VKS_KV_F16;
const bool BLOCKS = K_TYPE == VKS_KV_Q8_0 || V_TYPE == VKS_KV_Q8_0;

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

// Values v[0..32) of the block starting at column `col` of the pool row of `slot`, into a Q8_0
// pool as llama.cpp's quantize_row_q8_0 makes them: scale = max|v| / 127, int8 round(v / scale)
// (0 for an all-zero block).
void store_q8_block(bool is_k, uint slot, uint col, float v[VKS_KV_Q8_BLOCK]) {
  float amax = 0.0;
  [[unroll]] for (uint i = 0u; i < VKS_KV_Q8_BLOCK; ++i) amax = max(amax, abs(v[i]));
  const float d = amax / 127.0;
  const float id = d != 0.0 ? 1.0 / d : 0.0;
  const uint at = (slot * (p.n_kv_heads * p.head_dim) + col) / 4u;
  [[unroll]] for (uint w = 0u; w < VKS_KV_Q8_BLOCK / 4u; ++w) {
    uint word = 0u;
    [[unroll]] for (uint b = 0u; b < 4u; ++b) {
      const float q = v[4u * w + b] * id;  // rounded half away from zero, as roundf
      word |= (uint(int(sign(q) * floor(abs(q) + 0.5))) & 255u) << (8u * b);
    }
    if (is_k) k_pool[at + w] = word; else v_pool[at + w] = word;
  }
  const uint s_at = p.q8_scales_at + (slot * (p.n_kv_heads * p.head_dim) + col) / VKS_KV_Q8_BLOCK;
  if (is_k) k_pool[s_at] = floatBitsToUint(d); else v_pool[s_at] = floatBitsToUint(d);
}

// Block mode: K and V values [col, col + 32) of one token (col a multiple of 32 within the kv row).
void store_kv_block(uint row, int pos, uint slot, uint col) {
  const uint k_head_at = row + p.k_offset + (col / p.head_dim) * p.head_dim;
  const uint d0 = col % p.head_dim;
  float kv[VKS_KV_Q8_BLOCK];
  [[unroll]] for (uint i = 0u; i < VKS_KV_Q8_BLOCK; ++i) kv[i] = rotated_element(k_head_at, d0 + i, pos);
  if (K_TYPE == VKS_KV_Q8_0) {
    store_q8_block(true, slot, col, kv);
  } else {
    [[unroll]] for (uint i = 0u; i < VKS_KV_Q8_BLOCK; i += 2u) k_pool[(slot * (p.n_kv_heads * p.head_dim) + col + i) / 2u] = packHalf2x16(vec2(kv[i], kv[i + 1u]));
  }
  [[unroll]] for (uint i = 0u; i < VKS_KV_Q8_BLOCK; ++i) kv[i] = x[row + p.v_offset + col + i];
  if (V_TYPE == VKS_KV_Q8_0) {
    store_q8_block(false, slot, col, kv);
  } else {
    [[unroll]] for (uint i = 0u; i < VKS_KV_Q8_BLOCK; i += 2u) v_pool[(slot * (p.n_kv_heads * p.head_dim) + col + i) / 2u] = packHalf2x16(vec2(kv[i], kv[i + 1u]));
  }
}

void main() {
  const uint token = gl_GlobalInvocationID.y;
  const uint id = gl_GlobalInvocationID.x;
  const uint pairs_per_head = p.rope_dim / 2u;
  const uint q_pairs = p.n_q_heads * pairs_per_head;
  const uint kv_pairs = p.n_kv_heads * p.head_dim / 2u;
  const uint kv_units = BLOCKS ? p.n_kv_heads * p.head_dim / VKS_KV_Q8_BLOCK : kv_pairs;
  if (token >= p.n_tokens || id >= q_pairs + kv_units) return;
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
  if (BLOCKS) {
    store_kv_block(row, pos, uint(slot), (id - q_pairs) * VKS_KV_Q8_BLOCK);
    return;
  }
  const uint j = id - q_pairs;  // K/V elements 2j, 2j + 1 (one head: head_dim is even)
  const uint k_head_at = row + p.k_offset + (2u * j / p.head_dim) * p.head_dim;
  const uint d = 2u * j % p.head_dim;
  const uint dst = uint(slot) * kv_pairs + j;
  k_pool[dst] = packHalf2x16(vec2(rotated_element(k_head_at, d, pos), rotated_element(k_head_at, d + 1u, pos)));
  const uint v_at = row + p.v_offset + 2u * j;
  v_pool[dst] = packHalf2x16(vec2(x[v_at], x[v_at + 1u]));
}
