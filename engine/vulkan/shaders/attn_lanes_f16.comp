#version 450
// Paged causal attention for GPUs (the lanes family; attn_f16 is the CPU devices' kernel): one
// workgroup of VKS_ATTN_LANES_WG invocations per (head, query token) and, for decode batches, per
// split of its keys; same bindings 0-6, push constants and specialization as attn_f16 (attn_params.h).
//
// Why not attn_f16 on a GPU: one invocation per (token, head) walks all of its keys alone, so a
// decode step of 32 heads ran 32 threads on a 132-SM H100, and attention took 30% of a TinyLlama
// decode step at 140 tokens of context (41 us a layer).
//
// The numerics (attn_split.glsl): keys go in splits of p.split_keys from key 0, each split in
// tiles of VKS_ATTN_LANES_WG. In a tile invocation j scores key base + j (its pairs summed in order),
// the tile's max and sum of exp() are reduced in a fixed tree, and invocation i accumulates output
// pairs i, i + WG, ... over the tile's keys in order; a split starts from an empty state, and the
// splits are merged in ascending order. Nothing depends on the rest of the batch: a token's output
// is bit-identical however its sequence was batched or chunked (it differs from attn_f16's, whose
// sums run in another order).
//
// Two ways to run it, the same bits (p.split_count):
//   0 or 1  a workgroup walks every split of its (head, token) and writes the output (prefill,
//           and any step whose keys fit one split);
//   P > 1   workgroup z of grid z takes split z alone and writes its state to `partials`; the last
//           of a (head, token)'s workgroups to finish (a device-scope count in `split_counts`)
//           merges the stored states in ascending split order and writes the output, so a
//           layer's attention stays one dispatch. On a GPU a decode step of one sequence at
//           1,024 tokens of context ran 32 workgroups walking 16 tiles each, one after another:
//           13.3 ms a TinyLlama step on an H200 against 2.0 at 140 tokens.
//
// lavapipe's loop limit (65,535 iterations an invocation, nested loops counted; attn_f16.comp) holds
// here too when this family is forced on a CPU device: attention_max_keys() counts this kernel's loops.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "attn_params.h"

layout(local_size_x = VKS_ATTN_LANES_WG, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer QSrc { float q_src[]; };        // [n_tokens][q_stride]
layout(binding = 1) uniform usamplerBuffer k_texels;  // [n_slots][kv_dim/2] uints, from texel 0
layout(binding = 2) uniform usamplerBuffer v_texels;  // [n_slots][kv_dim/2] uints, from texel 0
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };  // [n_tokens]
layout(std430, binding = 4) readonly buffer TokenSeq { int token_seq[]; };   // [n_tokens]
layout(std430, binding = 5) readonly buffer BlockTables { int block_tables[]; };  // [n_seqs][max_blocks_per_seq]
layout(std430, binding = 6) writeonly buffer Out { float out_rows[]; };     // [n_tokens][out_stride]
// p.split_count > 1: [n_tokens][n_heads][split_count] records of attn_split.glsl (unused otherwise),
// coherent: the last workgroup of a (head, token) reads the records the others wrote.
layout(std430, binding = 7) coherent buffer Partials { float partials[]; };
layout(std430, binding = 8) readonly buffer Sinks { float sinks[]; };  // [n_heads] (p.has_sinks)
// p.split_count > 1: [n_tokens][n_heads] counts of the splits stored so far; zero before the
// dispatch, and zero again after it (the last workgroup resets its count).
layout(std430, binding = 9) coherent buffer SplitCounts { uint split_counts[]; };

layout(push_constant) uniform Push { AttnParams p; };

// Set by record_attention: p.head_dim == 2 * HALF_HD, and DIM_STEP divides HALF_HD.
layout(constant_id = 0) const uint HALF_HD = 4;   // head_dim / 2 (pairs of halves)
layout(constant_id = 1) const uint DIM_STEP = 4;  // pairs of a key read per score-loop iteration
layout(constant_id = 2) const uint K_TYPE = VKS_KV_F16;  // the pools' VKS_KV_* (quantized: DIM_STEP is 4)
layout(constant_id = 3) const uint V_TYPE = VKS_KV_F16;
const uint WG = VKS_ATTN_LANES_WG;                // keys per tile, and invocations
#include "attn_split.glsl"

shared vec2 q_shared[VKS_ATTN_MAX_HEAD_DIM / 2];  // the scaled query head
shared float reduce[WG];                          // the tile's max, then its sum of exp()
shared float weights[WG];                         // exp(score - running max) of the tile's keys
shared uint rows[WG];                             // first pair of each tile key's K/V row
shared bool merges_splits;                        // this workgroup stored its (head, token)'s last split

// Stores a split's state as record `record` of `partials` (attn_split.glsl's layout).
void write_split_state(SplitState t, uint record, uint lid) {
  const uint at = record * split_record_floats();
  if (lid == 0u) {
    partials[at] = t.m;
    partials[at + 1u] = t.l;
  }
  [[unroll]] for (uint r = 0; r < OWNED; ++r) {
    const uint i = lid + r * WG;
    if (i < HALF_HD) {
      partials[at + 2u + 2u * i] = t.o[r].x;
      partials[at + 3u + 2u * i] = t.o[r].y;
    }
  }
}

#include "kv_pool.glsl"

uvec4 pairs_at(usamplerBuffer pool, uint at) {
  if (DIM_STEP == 4u) return texelFetch(pool, int(at >> 2));
  uvec4 r = uvec4(0u);
  [[unroll]] for (uint u = 0; u < DIM_STEP; ++u) r[u] = texelFetch(pool, int((at + u) >> 2))[(at + u) & 3u];
  return r;
}

void main() {
  const uint head = gl_WorkGroupID.x;
  const uint token = gl_WorkGroupID.y;
  const uint lid = gl_LocalInvocationID.x;
  const uint kv_head = head / (p.n_heads / p.n_kv_heads);
  const uint kv_half_dim = p.n_kv_heads * HALF_HD;
  const uint kv_col = kv_head * HALF_HD;

  const uint q_at = token * p.q_stride + p.q_offset + head * p.head_dim;
  for (uint i = lid; i < HALF_HD; i += WG) q_shared[i] = vec2(q_src[q_at + 2 * i], q_src[q_at + 2 * i + 1]) * p.scale;
  vec2 acc[OWNED];  // this invocation's output pairs over the split so far (exp-weighted sums)
  barrier();

  const uint n_keys = uint(positions[token]) + 1;
  const uint first = first_visible_key(n_keys);
  const uint table = uint(token_seq[token]) * p.max_blocks_per_seq;
  const bool split_alone = p.split_count > 1u;  // this workgroup takes split gl_WorkGroupID.z only
  const uint first_split = split_alone ? gl_WorkGroupID.z : 0u;
  const uint end_split = split_alone ? first_split + 1u : split_count_of(n_keys - first);
  if (first_split >= split_count_of(n_keys - first)) return;  // a shorter sequence of the batch: no keys here
  SplitState total = empty_split_state();
  for (uint split = first_split; split < end_split; ++split) {
    const uint split_end = min(n_keys, first + (split + 1u) * p.split_keys);
    float m = -1.0 / 0.0;  // running max of the split's scores (the same in every invocation)
    float l = 0.0;         // running sum of exp(score - m)
    [[unroll]] for (uint r = 0; r < OWNED; ++r) acc[r] = vec2(0.0);
    for (uint base = first + split * p.split_keys; base < split_end; base += WG) {
      const uint n = min(WG, split_end - base);
      // This invocation's key; past the last key it repeats it, so loads stay in bounds (masked below).
      const uint key = base + min(lid, n - 1);
      const uint block = uint(block_tables[table + key / p.block_size]);
      const uint slot = min(block * p.block_size + key % p.block_size, p.n_slots - 1);
      const uint row = slot * kv_half_dim + kv_col;
      float s = 0.0;
      // Quantized keys a block of 16 pairs at a time (kv_block), in the same order.
      for (uint i0 = 0; i0 < HALF_HD && K_TYPE != VKS_KV_F16; i0 += 16u) {
        vec2 k2[16];
        kv_block(k_texels, K_TYPE, p.k_scales_at, row + i0, k2);
        [[unroll]] for (uint u = 0; u < 16u; ++u) s += q_shared[i0 + u].x * k2[u].x + q_shared[i0 + u].y * k2[u].y;
      }
      for (uint i0 = 0; i0 < HALF_HD && K_TYPE == VKS_KV_F16; i0 += DIM_STEP) {
        const uvec4 k4 = pairs_at(k_texels, row + i0);
        [[unroll]] for (uint u = 0; u < DIM_STEP; ++u) {
          const vec2 qi = q_shared[i0 + u];
          const vec2 k2 = unpack_halves(k4[u]);
          s += qi.x * k2.x + qi.y * k2.y;
        }
      }
      if (p.softcap > 0.0) s = p.softcap * tanh(s / p.softcap);
      rows[lid] = row;
      reduce[lid] = lid < n ? s : -1.0 / 0.0;
      barrier();
      [[unroll]] for (uint step = WG / 2; step > 0; step >>= 1) {
        if (lid < step) reduce[lid] = max(reduce[lid], reduce[lid + step]);
        barrier();
      }
      const float m_new = max(m, reduce[0]);
      barrier();  // every invocation has read the max before the sums overwrite it
      const float w = lid < n ? exp(s - m_new) : 0.0;
      weights[lid] = w;
      reduce[lid] = w;
      barrier();
      [[unroll]] for (uint step = WG / 2; step > 0; step >>= 1) {
        if (lid < step) reduce[lid] += reduce[lid + step];
        barrier();
      }
      const float correction = exp(m - m_new);
      l = l * correction + reduce[0];
      m = m_new;
      // Values: output pair i adds the tile's keys in order. All WG keys, unrolled, so that the loads
      // are in flight together: a loop over them waited for each (at 1,024 tokens of context, KV rows
      // no longer in L2, a decode step of TinyLlama on an H100 took 13.6 ms, 11 of them here).
      // Keys past the last weigh 0 and repeat its row, so they add +0 to a sum of finite values.
      [[unroll]] for (uint r = 0; r < OWNED; ++r) {
        const uint i = lid + r * WG;
        if (i < HALF_HD) {
          vec2 a = acc[r] * correction;
          [[unroll]] for (uint j = 0; j < WG; ++j) {
            const uint at = rows[j] + i;
            a += weights[j] * kv_pair(v_texels, V_TYPE, p.v_scales_at, at);
          }
          acc[r] = a;
        }
      }
      barrier();  // the tile's shared arrays are read before the next tile writes them
    }
    merge_split(total, m, l, acc);
  }

  const uint out_at = token * p.out_stride + head * p.head_dim;
  const float sink = p.has_sinks != 0u ? sinks[head] : -1.0 / 0.0;
  if (!split_alone) {
    write_output(total, out_at, lid, sink);
    return;
  }
  // Store this split's state; the workgroup that stores the last of the (head, token)'s splits
  // merges them all from memory (its own too), as a workgroup walking every split would.
  const uint first_record = (token * p.n_heads + head) * p.split_count;
  write_split_state(total, first_record + first_split, lid);
  memoryBarrierBuffer();  // every invocation's stores are visible device-wide before the count
  barrier();
  const uint n_splits = split_count_of(n_keys - first);
  const uint count_at = token * p.n_heads + head;
  // The counting invocation fences again on both sides of its atomic: the stores it publishes
  // are the whole workgroup's (ordered before it by the barrier), and the states it acquires are
  // read by every invocation after the next barrier.
  if (lid == 0u) {
    memoryBarrierBuffer();
    merges_splits = atomicAdd(split_counts[count_at], 1u) == n_splits - 1u;
    memoryBarrierBuffer();
  }
  barrier();
  if (!merges_splits) return;
  memoryBarrierBuffer();
  SplitState merged = empty_split_state();
  for (uint split = 0u; split < n_splits; ++split) {
    const uint at = (first_record + split) * split_record_floats();
    vec2 o[OWNED];
    [[unroll]] for (uint r = 0; r < OWNED; ++r) {
      const uint i = min(lid + r * WG, HALF_HD - 1u);  // pairs past the head repeat its last (never written)
      o[r] = vec2(partials[at + 2u + 2u * i], partials[at + 3u + 2u * i]);
    }
    merge_split(merged, partials[at], partials[at + 1u], o);
  }
  write_output(merged, out_at, lid, sink);
  if (lid == 0u) split_counts[count_at] = 0u;  // every other split's workgroup has counted
}
