// Push-constant parameters of the attention-side kernels (rope + KV write, paged attention),
// shared by C++ (engine/vulkan/runner) and GLSL (shaders/{rope_kv,attn}*.comp). Only 32-bit
// scalars, so the C++ layout equals GLSL's std430 push-constant layout.
//
// Paged KV cache layout (one K pool and one V pool per layer, F16):
//   slot = block * block_size + offset_in_block            (StepBatch::slot_mapping)
//   pool[slot][kv_head][d]  -> half at index (slot * n_kv_heads + kv_head) * head_dim + d
// Halves are stored two per uint (packHalf2x16: element 2i in the low 16 bits), so the pools
// need no 16-bit storage feature; head_dim must be even.
// A quantized pool (RunnerOptions::kv_type_k / kv_type_v, llama.cpp's -ctk/-ctv q8_0 and q4_0)
// holds the same [n_slots][kv_dim] values as blocks of VKS_KV_BLOCK, a plane of quants from uint 0,
// then one f32 scale per block at uint scales_at (k_scales_at / v_scales_at: the quant plane's
// uints, n_slots * kv_dim / 4 for Q8_0, / 8 for Q4_0):
//  - Q8_0: an int8 per value, four a uint (value 4i in the low byte); a value is scale * int8.
//  - Q4_0: a nibble per value, eight a uint (value 8i in the low nibble), a block one uvec4 texel;
//    a value is scale * (nibble - 8), llama.cpp's q4_0 numbers (the scale is the block's value of
//    largest magnitude / -8, so that value is exactly -8 steps).
// A block never straddles two heads: head_dim must be a multiple of VKS_KV_BLOCK. The scale is f32
// (llama.cpp's is f16) so that two writers of neighbouring blocks never share a word: Q8_0 takes 36
// bytes per 32 values, Q4_0 20, against F16's 64.
//
// Block tables: int32 [n_seqs][max_blocks_per_seq], row s = physical blocks of sequence s.
// Per-token arrays: positions[t], token_seq[t] (row of block_tables of token t's sequence).
#ifndef VKS_ATTN_PARAMS_H
#define VKS_ATTN_PARAMS_H

#include "shader_params.h"

#ifdef __cplusplus
#include <cstdint>
namespace vks::gpu {
using uint = uint32_t;
#endif

// Largest head_dim the attention kernel handles (q and the accumulator live in registers).
#define VKS_ATTN_MAX_HEAD_DIM 256
// Keys per online-softmax chunk. Part of the numerics: chunks start at key 0, so a key's chunk
// (and the summation order) never depends on batching or chunking.
#define VKS_ATTN_CHUNK 32
// attn_f16 keeps its loop count under VKS_LAVAPIPE_LOOP_BUDGET (shader_params.h).
// Heads per workgroup of attn_f16 (CPU devices: one invocation per (token, head)).
#define VKS_ATTN_HEADS_PER_GROUP 8
// Invocations per workgroup of attn_lanes_f16 (GPUs: one workgroup per (head, token)), and keys per tile.
#define VKS_ATTN_LANES_WG 64
// Keys per split of attn_lanes_f16 unless the device or the user picks another (AttnParams::
// split_keys, vk::attention_split_keys_for): a whole number of its tiles. Part of its numerics:
// splits start at key 0 and are merged in order, so a token's output does not depend on how its
// splits were run, only on the split size, which a runner keeps for its life.
#define VKS_ATTN_SPLIT_KEYS 128
// The split sizes a runner may take: multiples of VKS_ATTN_LANES_WG up to this many keys.
#define VKS_ATTN_SPLIT_KEYS_MAX 4096
#define VKS_ROPE_KV_WG 64
// KV pool types (the kernels' specialization constants, RopeKvParams / AttnParams k_type, v_type).
#define VKS_KV_F16 0
#define VKS_KV_Q8_0 1
#define VKS_KV_Q4_0 2
#define VKS_KV_BLOCK 32

// Rotary embedding as llama.cpp applies it, and the K/V cache write, in one dispatch (rope_kv_f16):
// Q heads are rotated in place; K heads are rotated on their way into the layer's F16 K pool and V
// copied into the V pool, at each token's slot. Pair i of a head (i < rope_dim/2) is rotated by
// theta = pos * freqs[i] * freq_scale, freqs[i] being freq_base^(-2i/rope_dim) / factor[i] (llama 3
// rope_freqs.weight, else 1; the layer's base; YaRN's blend) computed on the host
// (ref::rope_frequencies) so that no device pow() enters the angle; its elements are (2i, 2i+1) in NORM mode (llama) and (i, i + rope_dim/2) in NEOX
// mode (qwen2, qwen3). Elements past rope_dim pass through.
// Dispatch: (ceil((n_q_heads * rope_dim/2 + kv units) / VKS_ROPE_KV_WG), n_tokens, 1), the kv units
// being n_kv_heads * head_dim/2 pairs with both pools F16, else n_kv_heads * head_dim/4 quads.
#define VKS_ROPE_MODE_NORM 0
#define VKS_ROPE_MODE_NEOX 1
struct RopeKvParams {
  uint n_tokens;
  uint n_q_heads;   // heads rotated in place (0: none)
  uint n_kv_heads;  // K/V heads written to the pools (0: none)
  uint head_dim;    // even
  uint rope_dim;    // rotated dims per head (even, <= head_dim)
  uint row_stride;  // floats between consecutive tokens' rows
  uint q_offset;    // float index of Q head 0 within a row
  uint k_offset;    // float index of K head 0 within a row
  uint v_offset;    // float index of V within a row
  uint n_slots;     // slots in each pool (num_blocks * block_size): out-of-range slots are skipped
  float freq_scale;
  uint mode;  // VKS_ROPE_MODE_*
  float mscale_extra;  // cos and sin are multiplied by 1 + mscale_extra (YaRN's attention factor; 0: none)
  uint k_type;         // VKS_KV_* of each pool (the pipeline is specialized for them)
  uint v_type;
  uint k_scales_at;    // uint index of a quantized pool's scale plane (attn_params.h's layout)
  uint v_scales_at;
};

// Paged attention over a flattened batch: token t, head h attends to positions
// [0, positions[t]] of its sequence (the last `window` of them where window > 0) through the block
// table; scores q·k * scale, soft-capped where softcap > 0 (softcap * tanh(s / softcap)); with
// has_sinks, head h's sink logit (the sinks binding) joins the softmax denominator. Output row:
// n_heads * head_dim.
// Dispatch: attn_f16 (ceil(n_heads / VKS_ATTN_HEADS_PER_GROUP), n_tokens, 1); attn_lanes_f16
// (n_heads, n_tokens, max(split_count, 1)).
struct AttnParams {
  uint n_tokens;
  uint n_heads;
  uint n_kv_heads;          // divides n_heads (GQA)
  uint head_dim;            // even, <= VKS_ATTN_MAX_HEAD_DIM
  uint q_stride;            // floats between tokens' rows of the q source
  uint q_offset;            // float index of Q within a q-source row
  uint out_stride;          // floats between tokens' rows of the output
  uint block_size;
  uint max_blocks_per_seq;  // row length of block_tables
  uint n_slots;             // slots per pool (bounds check)
  float scale;              // 1/sqrt(head_dim), applied to q
  uint split_count;         // attn_lanes_f16: 0 or 1, a workgroup per (head, token) walks every split;
                            // P > 1, grid z = P takes one split each, the last to finish merges them
  uint window;              // 0: every position up to the token's own; W: the last W of them
  float softcap;            // 0: none
  uint has_sinks;           // 0: the sinks binding is not read
  uint k_type;              // VKS_KV_* of each pool (the pipeline is specialized for them)
  uint v_type;
  uint k_scales_at;         // uint index of a quantized pool's scale plane (the layout above)
  uint v_scales_at;
  uint split_keys;          // attn_lanes_f16: keys per split (a multiple of VKS_ATTN_LANES_WG)
};

#ifdef __cplusplus
}  // namespace vks::gpu
#endif

#endif  // VKS_ATTN_PARAMS_H
