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
//
// lavapipe (Mesa's llvmpipe) silently ends a shader's loops once the invocation has run 65,535 loop
// iterations in all, nested loops included. A loop over the head dimension per key spent that
// after ~960 keys at head_dim 64 (the rest were skipped and uninitialized scores read). So the
// pipeline is specialized with the head size, the loops over a chunk's keys are unrolled, and the
// only runtime loops step through the head dimension DIM_STEP pairs at a time, once per chunk:
// 2 * HALF_HD / DIM_STEP + 1 iterations per CHUNK keys (attention_max_keys() in attn_kernels.h).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "attn_params.h"

layout(local_size_x = VKS_ATTN_HEADS_PER_GROUP, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer QSrc { float q_src[]; };        // [n_tokens][q_stride]
// The pools are read through texel views (uvec4 = 4 pairs of halves): lavapipe loads a storage
// buffer lane by lane but gathers texels as vectors (see common_matmul.glsl); at 1,024 tokens of
// context attention was a third of a SmolLM2 decode step with storage-buffer reads.
layout(binding = 1) uniform usamplerBuffer k_texels;  // [n_slots][kv_dim/2] uints, from texel 0
layout(binding = 2) uniform usamplerBuffer v_texels;  // [n_slots][kv_dim/2] uints, from texel 0
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };  // [n_tokens]
layout(std430, binding = 4) readonly buffer TokenSeq { int token_seq[]; };   // [n_tokens]
layout(std430, binding = 5) readonly buffer BlockTables { int block_tables[]; };  // [n_seqs][max_blocks_per_seq]
layout(std430, binding = 6) writeonly buffer Out { float out_rows[]; };     // [n_tokens][out_stride]
layout(std430, binding = 7) readonly buffer Sinks { float sinks[]; };       // [n_heads] (p.has_sinks)

layout(push_constant) uniform Push { AttnParams p; };

// Set by record_attention: p.head_dim == 2 * HALF_HD, and DIM_STEP divides HALF_HD.
layout(constant_id = 0) const uint HALF_HD = 4;   // head_dim / 2 (pairs of halves)
layout(constant_id = 1) const uint DIM_STEP = 4;  // pairs handled per runtime-loop iteration
layout(constant_id = 2) const uint K_TYPE = VKS_KV_F16;  // the pools' VKS_KV_* (quantized: DIM_STEP is 4)
layout(constant_id = 3) const uint V_TYPE = VKS_KV_F16;
const uint CHUNK = VKS_ATTN_CHUNK;

// Pairs at..at+DIM_STEP-1 of a pool (at is a multiple of DIM_STEP). With DIM_STEP 4 they are one
// texel: HALF_HD is then a multiple of 4, and so is every row start and i0 (attention_specialization).
#include "kv_pool.glsl"

uvec4 pairs_at(usamplerBuffer pool, uint at) {
  if (DIM_STEP == 4u) return texelFetch(pool, int(at >> 2));
  uvec4 r = uvec4(0u);
  [[unroll]] for (uint u = 0; u < DIM_STEP; ++u) r[u] = texelFetch(pool, int((at + u) >> 2))[(at + u) & 3u];
  return r;
}

void main() {
  const uint head = gl_GlobalInvocationID.x;
  const uint token = gl_GlobalInvocationID.y;
  if (head >= p.n_heads || token >= p.n_tokens) return;
  const uint kv_head = head / (p.n_heads / p.n_kv_heads);
  const uint kv_half_dim = p.n_kv_heads * HALF_HD;
  const uint kv_col = kv_head * HALF_HD;

  vec2 q[HALF_HD];
  vec2 acc[HALF_HD];
  const uint q_at = token * p.q_stride + p.q_offset + head * p.head_dim;
  for (uint i0 = 0; i0 < HALF_HD; i0 += DIM_STEP) {
    [[unroll]] for (uint u = 0; u < DIM_STEP; ++u) {
      const uint i = i0 + u;
      q[i] = vec2(q_src[q_at + 2 * i], q_src[q_at + 2 * i + 1]) * p.scale;
      acc[i] = vec2(0.0);
    }
  }

  const uint n_keys = uint(positions[token]) + 1;
  // A window layer's chunks start at its first visible key: still a function of the token alone.
  const uint first = p.window == 0u || n_keys <= p.window ? 0u : n_keys - p.window;
  const uint table = uint(token_seq[token]) * p.max_blocks_per_seq;
  float m = -1.0 / 0.0;  // running max of the scores
  float l = 0.0;         // running sum of exp(score - m)

  for (uint base = first; base < n_keys; base += CHUNK) {
    const uint n = min(CHUNK, n_keys - base);
    // Rows of the chunk's keys; keys past the last repeat it, so every load below is in bounds
    // (their scores are left out of the max and the sums).
    uint rows[CHUNK];
    float s[CHUNK];
    [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
      const uint key = base + min(j, n - 1);
      const uint block = uint(block_tables[table + key / p.block_size]);
      const uint slot = min(block * p.block_size + key % p.block_size, p.n_slots - 1);
      rows[j] = slot * kv_half_dim + kv_col;
      s[j] = 0.0;
    }
    // Scores: each key's dot product sums its pairs in order (i0, then u, ascending).
    // Quantized keys a block of 16 pairs at a time (kv_block), in the same order.
    for (uint i0 = 0; i0 < HALF_HD && K_TYPE != VKS_KV_F16; i0 += 16u) {
      [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
        vec2 k2[16];
        kv_block(k_texels, K_TYPE, p.k_scales_at, rows[j] + i0, k2);
        [[unroll]] for (uint u = 0; u < 16u; ++u) s[j] += q[i0 + u].x * k2[u].x + q[i0 + u].y * k2[u].y;
      }
    }
    for (uint i0 = 0; i0 < HALF_HD && K_TYPE == VKS_KV_F16; i0 += DIM_STEP) {
      [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
        const uvec4 k4 = pairs_at(k_texels, rows[j] + i0);
        [[unroll]] for (uint u = 0; u < DIM_STEP; ++u) {
          const vec2 qi = q[i0 + u];
          const vec2 k2 = unpack_halves(k4[u]);
          s[j] += qi.x * k2.x + qi.y * k2.y;
        }
      }
    }
    if (p.softcap > 0.0) {
      [[unroll]] for (uint j = 0; j < CHUNK; ++j) s[j] = p.softcap * tanh(s[j] / p.softcap);
    }
    float chunk_max = -1.0 / 0.0;
    [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
      if (j < n) chunk_max = max(chunk_max, s[j]);
    }
    const float m_new = max(m, chunk_max);
    const float correction = exp(m - m_new);
    l *= correction;
    float pj[CHUNK];
    [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
      pj[j] = exp(s[j] - m_new);
      if (j < n) l += pj[j];
    }
    // Values: each pair's accumulator adds the chunk's keys in order (j ascending).
    for (uint i0 = 0; i0 < HALF_HD && V_TYPE != VKS_KV_F16; i0 += 16u) {
      vec2 a[16];
      [[unroll]] for (uint u = 0; u < 16u; ++u) a[u] = acc[i0 + u] * correction;
      [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
        if (j < n) {
          vec2 v2[16];
          kv_block(v_texels, V_TYPE, p.v_scales_at, rows[j] + i0, v2);
          [[unroll]] for (uint u = 0; u < 16u; ++u) a[u] += pj[j] * v2[u];
        }
      }
      [[unroll]] for (uint u = 0; u < 16u; ++u) acc[i0 + u] = a[u];
    }
    for (uint i0 = 0; i0 < HALF_HD && V_TYPE == VKS_KV_F16; i0 += DIM_STEP) {
      vec2 a[DIM_STEP];
      [[unroll]] for (uint u = 0; u < DIM_STEP; ++u) a[u] = acc[i0 + u] * correction;
      [[unroll]] for (uint j = 0; j < CHUNK; ++j) {
        if (j < n) {
          const uvec4 v4 = pairs_at(v_texels, rows[j] + i0);
          [[unroll]] for (uint u = 0; u < DIM_STEP; ++u) a[u] += pj[j] * unpack_halves(v4[u]);
        }
      }
      [[unroll]] for (uint u = 0; u < DIM_STEP; ++u) acc[i0 + u] = a[u];
    }
    m = m_new;
  }

  if (p.has_sinks != 0u) {  // the sink weighs in the denominator only
    const float sink = sinks[head];
    const float m_sink = max(m, sink);
    const float correction = exp(m - m_sink);
    l = l * correction + exp(sink - m_sink);
    for (uint i0 = 0; i0 < HALF_HD; i0 += DIM_STEP) {
      [[unroll]] for (uint u = 0; u < DIM_STEP; ++u) acc[i0 + u] *= correction;
    }
  }
  const float inv_l = 1.0 / l;
  const uint out_at = token * p.out_stride + head * p.head_dim;
  for (uint i0 = 0; i0 < HALF_HD; i0 += DIM_STEP) {
    [[unroll]] for (uint u = 0; u < DIM_STEP; ++u) {
      const uint i = i0 + u;
      out_rows[out_at + 2 * i] = acc[i].x * inv_l;
      out_rows[out_at + 2 * i + 1] = acc[i].y * inv_l;
    }
  }
}
