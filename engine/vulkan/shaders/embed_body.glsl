// embed_<type>: out[t][j] = table[tokens[t] - row_begin][j] for tokens inside this part's rows.
// Values are exactly the dequantized weights (the decode of weight_blocks.glsl, as in matmul).
//   F32 (also Ops::gather_rows on plain buffers whose row stride need not be a multiple of 4):
//     one invocation per element, grid x = ceil(cols / 64), y = n_tokens.
//   every other format: one invocation per chunk of 8 weights, grid x = ceil(ceil(cols / 8) / 64).
#include "common.glsl"

layout(local_size_x = 64) in;
layout(push_constant) uniform PushBlock { EmbedParams p; };
layout(std430, binding = 1) readonly buffer Tokens { int tokens[]; };
layout(std430, binding = 2) buffer Out { float outv[]; };

#if defined(WTYPE_F32)
layout(std430, binding = 0) readonly buffer Table { uint w[]; };  // one part of a DeviceMatrix

void main() {
  const uint j = gl_GlobalInvocationID.x;
  const uint t = gl_WorkGroupID.y;
  if (j >= p.cols || t >= p.n_tokens) return;
  const int id = tokens[t];
  if (id < int(p.row_begin) || uint(id) - p.row_begin >= p.row_count) return;
  outv[t * p.out_stride + j] = uintBitsToFloat(w[(uint(id) - p.row_begin) * p.row_stride + j]);
}
#else
// A storage buffer, not a texel view as in the matrix kernels: a gather reads one row per token.
layout(std430, binding = 0) readonly buffer Table { uvec4 w4[]; };  // one part of a DeviceMatrix
uvec4 wfetch(uint i) { return w4[i]; }
#include "weight_blocks.glsl"

void main() {
  const uint c = gl_GlobalInvocationID.x;  // chunk of the row
  const uint t = gl_WorkGroupID.y;
  if (c * 8u >= p.cols || t >= p.n_tokens) return;
  const int id = tokens[t];
  if (id < int(p.row_begin) || uint(id) - p.row_begin >= p.row_count) return;
  const uint row = uint(id) - p.row_begin;
  const uint g = c / GROUP_CHUNKS;
  const uint first_group = g & ~7u;
  float wv[8];
  dequant(load_group(row, g, load_side(row, first_group), g - first_group), c % GROUP_CHUNKS, wv);
  const uint ob = t * p.out_stride;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const uint j = x_index(c, i);
    if (j < p.cols) outv[ob + j] = wv[i];
  }
}
#endif
