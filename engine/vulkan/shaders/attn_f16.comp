#version 450
// Paged causal attention over a flattened batch (decode tokens and prefill chunks alike).
// One invocation per (query token t, head h): q = row t of Q, head h; it attends to keys
// 0..positions[t] of its sequence, read from the F16 pools through the sequence's block table
// (layout: attn_params.h). GQA: head h reads kv head h / (n_heads / n_kv_heads); the heads of a
// workgroup are adjacent, so they share kv heads and their loads hit the same cache lines.
//
// Why serial per invocation: on CPU devices (lavapipe) workgroup barriers and shared memory cost
// far more than the arithmetic of attention, and the SIMD lanes are the 8 heads of a workgroup.
//
// Online softmax over chunks of VKS_ATTN_CHUNK keys that start at key 0, with every sum in key
// order: a token's output is bit-identical however its sequence was batched or chunked.
#extension GL_GOOGLE_include_directive : require
#include "attn_params.h"

layout(local_size_x = VKS_ATTN_HEADS_PER_GROUP, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer QSrc { float q_src[]; };        // [n_tokens][q_stride]
layout(std430, binding = 1) readonly buffer KPool { uint k_pool[]; };       // [n_slots][kv_dim/2]
layout(std430, binding = 2) readonly buffer VPool { uint v_pool[]; };       // [n_slots][kv_dim/2]
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };  // [n_tokens]
layout(std430, binding = 4) readonly buffer TokenSeq { int token_seq[]; };   // [n_tokens]
layout(std430, binding = 5) readonly buffer BlockTables { int block_tables[]; };  // [n_seqs][max_blocks_per_seq]
layout(std430, binding = 6) writeonly buffer Out { float out_rows[]; };     // [n_tokens][out_stride]

layout(push_constant) uniform Push { AttnParams p; };

const uint HALF_MAX = VKS_ATTN_MAX_HEAD_DIM / 2;
const uint CHUNK = VKS_ATTN_CHUNK;

void main() {
  const uint head = gl_GlobalInvocationID.x;
  const uint token = gl_GlobalInvocationID.y;
  if (head >= p.n_heads || token >= p.n_tokens) return;
  const uint half_hd = p.head_dim / 2;
  const uint kv_head = head / (p.n_heads / p.n_kv_heads);
  const uint kv_half_dim = p.n_kv_heads * half_hd;
  const uint kv_col = kv_head * half_hd;

  vec2 q[HALF_MAX];
  vec2 acc[HALF_MAX];
  const uint q_at = token * p.q_stride + p.q_offset + head * p.head_dim;
  for (uint i = 0; i < half_hd; ++i) {
    q[i] = vec2(q_src[q_at + 2 * i], q_src[q_at + 2 * i + 1]) * p.scale;
    acc[i] = vec2(0.0);
  }

  const uint n_keys = uint(positions[token]) + 1;
  const uint table = uint(token_seq[token]) * p.max_blocks_per_seq;
  float m = -1.0 / 0.0;  // running max of the scores
  float l = 0.0;         // running sum of exp(score - m)
  float s[CHUNK];
  uint rows[CHUNK];

  for (uint base = 0; base < n_keys; base += CHUNK) {
    const uint n = min(CHUNK, n_keys - base);
    float chunk_max = -1.0 / 0.0;
    for (uint j = 0; j < n; ++j) {
      const uint key = base + j;
      const uint block = uint(block_tables[table + key / p.block_size]);
      const uint slot = min(block * p.block_size + key % p.block_size, p.n_slots - 1);
      const uint row = slot * kv_half_dim + kv_col;
      rows[j] = row;
      float dot_qk = 0.0;
      for (uint i = 0; i < half_hd; ++i) {
        const vec2 k2 = unpackHalf2x16(k_pool[row + i]);
        dot_qk += q[i].x * k2.x + q[i].y * k2.y;
      }
      s[j] = dot_qk;
      chunk_max = max(chunk_max, dot_qk);
    }
    const float m_new = max(m, chunk_max);
    const float correction = exp(m - m_new);
    l *= correction;
    for (uint i = 0; i < half_hd; ++i) acc[i] *= correction;
    for (uint j = 0; j < n; ++j) {
      const float pj = exp(s[j] - m_new);
      l += pj;
      const uint row = rows[j];
      for (uint i = 0; i < half_hd; ++i) acc[i] += pj * unpackHalf2x16(v_pool[row + i]);
    }
    m = m_new;
  }

  const float inv_l = 1.0 / l;
  const uint out_at = token * p.out_stride + head * p.head_dim;
  for (uint i = 0; i < half_hd; ++i) {
    out_rows[out_at + 2 * i] = acc[i].x * inv_l;
    out_rows[out_at + 2 * i + 1] = acc[i].y * inv_l;
  }
}
