#version 450
// deltanet_rule_f32: the Gated DeltaNet recurrence (deltanet_params.h), token by token. Each
// invocation owns one column c of value head j's state: every step of the rule reads and writes
// that column only (S^T k and S^T q are sums down it), so the column lives in registers for the
// tokens of one dispatch, and the columns need no synchronisation. A token's values depend only on
// its own sequence's earlier tokens, in a fixed order: the same bits alone, batched or chunked.
// Grid x = sequences, y = value heads, z = ceil(head_dim / VKS_DELTANET_RULE_WG). The runner splits a
// long chunk over several dispatches (deltanet_tokens_per_dispatch: lavapipe's loop budget); each
// leaves the state in memory for the next.
#extension GL_GOOGLE_include_directive : require
#include "deltanet_params.h"

layout(local_size_x = VKS_DELTANET_RULE_WG) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };        // conv output: q | k | v
layout(std430, binding = 1) readonly buffer Gates { float gates[]; };  // raw beta and alpha
layout(std430, binding = 2) readonly buffer DtBias { float dt_bias[]; };
layout(std430, binding = 3) readonly buffer A { float ssm_a[]; };
layout(std430, binding = 4) buffer State { float state[]; };
layout(std430, binding = 5) readonly buffer Seqs { int seqs[]; };
layout(std430, binding = 6) writeonly buffer Out { float outv[]; };
layout(push_constant) uniform PushBlock { DeltaNetRuleParams p; };

float softplus(float v) {
  if (v > 20.0) return v;
  const float e = exp(v);
  return e < 1e-4 ? e * (1.0 - 0.5 * e) : log(1.0 + e);  // log1p where 1 + e would round e away
}

void main() {
  const uint seq = gl_WorkGroupID.x;
  const uint j = gl_WorkGroupID.y;
  const uint c = gl_WorkGroupID.z * VKS_DELTANET_RULE_WG + gl_LocalInvocationID.x;
  const uint hd = p.head_dim;
  if (c >= hd) return;
  const uint first = uint(seqs[seq * VKS_DELTANET_SEQ_FIELDS]);
  const uint n = uint(seqs[seq * VKS_DELTANET_SEQ_FIELDS + 1]);
  if (p.token_begin >= n) return;
  const uint slot = uint(seqs[seq * VKS_DELTANET_SEQ_FIELDS + 2]);
  const bool fresh = seqs[seq * VKS_DELTANET_SEQ_FIELDS + 3] != 0 && p.token_begin == 0u;
  const uint end = min(n, p.token_begin + p.token_count);
  const uint g = j % p.n_groups;
  const uint column = slot * p.slot_floats + j * hd * hd + c;
  float s[VKS_DELTANET_MAX_HEAD_DIM];
  for (uint i = 0u; i < hd; ++i) s[i] = fresh ? 0.0 : state[column + i * hd];
  for (uint t = first + p.token_begin; t < first + end; ++t) {
    const uint q = t * p.x_stride + g * hd;
    const uint k = q + p.k_at;
    const float v = x[t * p.x_stride + p.v_at + j * hd + c];
    const uint gate = t * p.gate_stride;
    const float decay = exp(softplus(gates[gate + p.alpha_at + j] + dt_bias[j]) * ssm_a[j]);
    const float beta = 1.0 / (1.0 + exp(-gates[gate + p.beta_at + j]));
    float update = 0.0;
    for (uint i = 0u; i < hd; ++i) {
      s[i] *= decay;
      update += s[i] * x[k + i];
    }
    const float u = beta * (v - update);
    float o = 0.0;
    for (uint i = 0u; i < hd; ++i) {
      s[i] += x[k + i] * u;
      o += s[i] * x[q + i];
    }
    outv[t * p.out_stride + j * hd + c] = o * p.scale;
  }
  for (uint i = 0u; i < hd; ++i) state[column + i * hd] = s[i];
}
