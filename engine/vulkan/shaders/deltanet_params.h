// Push constants of the Gated DeltaNet kernels (the pattern of shader_params.h: 4-byte scalars only,
// one definition for C++ and GLSL). Both read the step's sequences as int32 [n_seqs][4]:
// {first token, tokens, state slot, 1 when the chunk starts its sequence (its state is zero)}.
#ifndef VKS_DELTANET_PARAMS_H
#define VKS_DELTANET_PARAMS_H

#ifdef __cplusplus
#include <cstdint>
namespace vks::vk::shader {
using uint = uint32_t;
#endif

#define VKS_DELTANET_SEQ_FIELDS 4
// The widest head the delta rule kernel keeps in registers (a column of one head's state).
#define VKS_DELTANET_MAX_HEAD_DIM 256
// Invocations of a delta rule workgroup: each owns one column of a value head's state.
#define VKS_DELTANET_RULE_WG 32

// deltanet_conv_f32, the causal depthwise conv of kernel taps over channels, a sequence's earlier
// inputs kept in its state slot ([kernel - 1][channels], oldest first, slot_floats apart).
// shift 0: out[t][c] = silu(sum over k of w[c][k] * in(t - (kernel - 1) + k)[c]) for token t (grid y),
// in(j) being x[j] within t's chunk and the state before it. shift 1 (after): each sequence's
// (grid y) state becomes its last kernel - 1 inputs.
struct DeltaNetConvParams {
  uint channels;
  uint kernel;
  uint x_stride;
  uint out_stride;
  uint slot_floats;
  uint shift;
};

// deltanet_rule_f32: one workgroup per (sequence, value head j, block of VKS_DELTANET_RULE_WG state
// columns) runs the tokens [token_begin, token_begin + token_count) of its chunk in order:
// S = decay S; S += k (x) beta (v - S^T k); out = scale S^T q, with decay = exp(softplus(alpha +
// dt_bias[j]) * a[j]) and beta = sigmoid(beta); q, k: head j mod n_groups of the conv output (q
// at 0, k at k_at), v: head j at v_at; beta and alpha (raw) at beta_at + j and alpha_at + j of the
// gate rows. S: [head_dim (key)][head_dim (value)] per head, n_v_heads of them a slot.
struct DeltaNetRuleParams {
  uint head_dim;
  uint n_groups;
  uint x_stride;      // floats between tokens of the conv output
  uint k_at;
  uint v_at;
  uint gate_stride;   // floats between tokens of the beta/alpha rows
  uint beta_at;
  uint alpha_at;
  uint out_stride;
  uint slot_floats;
  float scale;
  uint token_begin;
  uint token_count;
};

#ifdef __cplusplus
static_assert(sizeof(DeltaNetConvParams) <= 128 && sizeof(DeltaNetConvParams) % 4 == 0);
static_assert(sizeof(DeltaNetRuleParams) <= 128 && sizeof(DeltaNetRuleParams) % 4 == 0);
}  // namespace vks::vk::shader
#endif

#endif  // VKS_DELTANET_PARAMS_H
