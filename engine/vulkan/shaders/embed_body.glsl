// embed_<type>: out[t][j] = table[tokens[t] - row_begin][j] for tokens inside this part's rows.
// One invocation per element: grid x = ceil(cols / 64), y = n_tokens. Values are exactly the
// dequantized weights (d * q is exact in fp32).
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Table { uint w[]; };    // one part of a DeviceMatrix
layout(std430, binding = 1) readonly buffer Tokens { int tokens[]; };
layout(std430, binding = 2) buffer Out { float outv[]; };
layout(push_constant) uniform PushBlock { EmbedParams p; };

float half_at(uint half_index) {
  const uint word = w[half_index >> 1];
  return unpackHalf2x16((half_index & 1u) != 0u ? word >> 16 : word).x;
}

float element(uint row, uint j) {
#if defined(WTYPE_F32)
  return uintBitsToFloat(w[row * p.row_stride + j]);
#elif defined(WTYPE_F16)
  return half_at(row * p.row_stride + j);
#elif defined(WTYPE_Q8_0)
  const uint q = w[row * p.row_stride + (j >> 2)];
  const float d = half_at(p.d_offset * 2u + row * ((((p.cols >> 5) + 7u) & ~7u)) + (j >> 5));
  return d * float(int(q << (24u - 8u * (j & 3u))) >> 24);
#elif defined(WTYPE_Q4_0)
  const uint jj = j & 31u;
  const uint byte_index = jj & 15u;
  const uint q = w[row * p.row_stride + (j >> 5) * 4u + (byte_index >> 2)];
  const uint shift = 8u * (byte_index & 3u) + (jj >= 16u ? 4u : 0u);
  const float d = half_at(p.d_offset * 2u + row * ((((p.cols >> 5) + 7u) & ~7u)) + (j >> 5));
  return d * float(int(q << (28u - shift)) >> 28);
#else
#error "define the table type"
#endif
}

void main() {
  const uint j = gl_GlobalInvocationID.x;
  const uint t = gl_WorkGroupID.y;
  if (j >= p.cols || t >= p.n_tokens) return;
  const int id = tokens[t];
  if (id < int(p.row_begin) || uint(id) - p.row_begin >= p.row_count) return;
  outv[t * p.out_stride + j] = element(uint(id) - p.row_begin, j);
}
