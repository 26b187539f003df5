#version 450
// Paged causal attention over a flattened batch (decode tokens and prefill chunks alike).
// Workgroup = (head h, token t): q = row t of Q, head h; it attends to keys 0..positions[t] of its
// sequence, read from the F16 pools through the sequence's block table (layout: attn_params.h).
// GQA: head h reads kv head h / (n_heads / n_kv_heads).
//
// Online softmax over tiles of VKS_ATTN_TILE keys. Tiles start at key 0 and every sum runs in a
// fixed order inside a tile, so a token's output is bit-identical however its sequence was batched
// or chunked (the cached prefix and the chunk's own keys are read through the same pools).
#extension GL_GOOGLE_include_directive : require
#include "attn_params.h"

layout(local_size_x = VKS_ATTN_TILE, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer QSrc { float q_src[]; };        // [n_tokens][q_stride]
layout(std430, binding = 1) readonly buffer KPool { uint k_pool[]; };       // [n_slots][kv_dim/2]
layout(std430, binding = 2) readonly buffer VPool { uint v_pool[]; };       // [n_slots][kv_dim/2]
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };  // [n_tokens]
layout(std430, binding = 4) readonly buffer TokenSeq { int token_seq[]; };   // [n_tokens]
layout(std430, binding = 5) readonly buffer BlockTables { int block_tables[]; };  // [n_seqs][max_blocks_per_seq]
layout(std430, binding = 6) writeonly buffer Out { float out_rows[]; };     // [n_tokens][out_stride]

layout(push_constant) uniform Push { AttnParams p; };

const uint TILE = VKS_ATTN_TILE;
const uint DIMS_PER_LANE = VKS_ATTN_MAX_HEAD_DIM / VKS_ATTN_TILE;

shared float s_q[VKS_ATTN_MAX_HEAD_DIM];
shared float s_p[TILE];     // scores, then probabilities, of the tile's keys
shared uint s_row[TILE];    // half2 index of each tile key's row start in the pools
shared float s_red[TILE];

void main() {
  const uint head = gl_WorkGroupID.x;
  const uint token = gl_WorkGroupID.y;
  const uint lane = gl_LocalInvocationID.x;
  const uint hd = p.head_dim;
  const uint half_hd = hd / 2;
  const uint kv_head = head / (p.n_heads / p.n_kv_heads);
  const uint kv_half_dim = p.n_kv_heads * half_hd;

  const uint q_at = token * p.q_stride + p.q_offset + head * hd;
  for (uint d = lane; d < hd; d += TILE) s_q[d] = q_src[q_at + d];

  const int pos = positions[token];
  const uint n_keys = uint(pos) + 1;
  const uint table = uint(token_seq[token]) * p.max_blocks_per_seq;

  float m = -1.0 / 0.0;  // running max
  float l = 0.0;         // running sum of exp(score - m)
  float acc[DIMS_PER_LANE];
  for (uint r = 0; r < DIMS_PER_LANE; ++r) acc[r] = 0.0;
  barrier();

  for (uint base = 0; base < n_keys; base += TILE) {
    const uint key = base + lane;
    float score = -1.0 / 0.0;
    if (key < n_keys) {
      const uint block = uint(block_tables[table + key / p.block_size]);
      const uint slot = min(block * p.block_size + key % p.block_size, p.n_slots - 1);
      const uint row = slot * kv_half_dim + kv_head * half_hd;
      s_row[lane] = row;
      float dot_qk = 0.0;
      for (uint i = 0; i < half_hd; ++i) {
        const vec2 k2 = unpackHalf2x16(k_pool[row + i]);
        dot_qk += s_q[2 * i] * k2.x + s_q[2 * i + 1] * k2.y;
      }
      score = dot_qk * p.scale;
    }
    s_red[lane] = score;
    barrier();
    for (uint stride = TILE / 2; stride > 0; stride /= 2) {
      if (lane < stride) s_red[lane] = max(s_red[lane], s_red[lane + stride]);
      barrier();
    }
    const float m_new = max(m, s_red[0]);
    const float correction = exp(m - m_new);
    s_p[lane] = key < n_keys ? exp(score - m_new) : 0.0;
    barrier();

    const uint n_tile = min(TILE, n_keys - base);
    float tile_sum = 0.0;
    for (uint j = 0; j < n_tile; ++j) tile_sum += s_p[j];
    l = l * correction + tile_sum;
    m = m_new;

    for (uint r = 0; r < DIMS_PER_LANE; ++r) {
      const uint d = lane + r * TILE;
      if (d >= hd) break;
      const uint pair = d / 2;
      const bool high = (d & 1u) != 0u;
      float a = 0.0;
      for (uint j = 0; j < n_tile; ++j) {
        const vec2 v2 = unpackHalf2x16(v_pool[s_row[j] + pair]);
        a += s_p[j] * (high ? v2.y : v2.x);
      }
      acc[r] = acc[r] * correction + a;
    }
    barrier();  // s_p / s_row / s_red are rewritten by the next tile
  }

  const float inv_l = 1.0 / l;
  const uint out_at = token * p.out_stride + head * hd;
  for (uint r = 0; r < DIMS_PER_LANE; ++r) {
    const uint d = lane + r * TILE;
    if (d >= hd) break;
    out_rows[out_at + d] = acc[r] * inv_l;
  }
}
