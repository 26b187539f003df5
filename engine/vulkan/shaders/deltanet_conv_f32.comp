#version 450
// deltanet_conv_f32: a Gated DeltaNet layer's causal depthwise conv with its state (deltanet_params.h).
// Every token is computed on its own from its chunk's inputs and the state before the chunk, its
// taps summed oldest first, so its value does not depend on the batch; the state shift is a second
// dispatch (shift 1), after every token has read the old state. Grid x = ceil(channels / 64).
#extension GL_GOOGLE_include_directive : require
#include "deltanet_params.h"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) buffer State { float state[]; };
layout(std430, binding = 3) buffer Out { float outv[]; };
layout(std430, binding = 4) readonly buffer TokenSeq { int token_seq[]; };
layout(std430, binding = 5) readonly buffer Seqs { int seqs[]; };
layout(push_constant) uniform PushBlock { DeltaNetConvParams p; };

// Input j of a chunk starting at token `first` (j < 0: the state's entry past + j).
float input_at(int j, uint first, uint slot_base, bool fresh, uint past, uint c) {
  if (j >= 0) return x[(first + uint(j)) * p.x_stride + c];
  return fresh ? 0.0 : state[slot_base + uint(int(past) + j) * p.channels + c];
}

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= p.channels) return;
  const uint past = p.kernel - 1u;
  const uint seq = p.shift == 0u ? uint(token_seq[gl_WorkGroupID.y]) : gl_WorkGroupID.y;
  const uint first = uint(seqs[seq * VKS_DELTANET_SEQ_FIELDS]);
  const uint n = uint(seqs[seq * VKS_DELTANET_SEQ_FIELDS + 1]);
  const uint slot_base = uint(seqs[seq * VKS_DELTANET_SEQ_FIELDS + 2]) * p.slot_floats;
  const bool fresh = seqs[seq * VKS_DELTANET_SEQ_FIELDS + 3] != 0;
  if (p.shift == 0u) {
    const uint t = gl_WorkGroupID.y;
    const int i = int(t - first);
    float sum = 0.0;
    for (uint k = 0u; k < p.kernel; ++k) {
      sum += w[c * p.kernel + k] * input_at(i - int(past) + int(k), first, slot_base, fresh, past, c);
    }
    outv[t * p.out_stride + c] = sum / (1.0 + exp(-sum));
    return;
  }
  // Entry k becomes input n - past + k: read from entry n + k > k when it is still in the state, so
  // ascending k never reads an entry already replaced.
  for (uint k = 0u; k < past; ++k) {
    state[slot_base + k * p.channels + c] = input_at(int(n) - int(past) + int(k), first, slot_base, fresh, past, c);
  }
}
