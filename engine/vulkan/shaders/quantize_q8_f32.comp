#version 450
// quantize_q8_f32: the activations of the dot-product kernels (Ops' MatmulFamily::kDot) as Q8 rows
// (shader_params.h QuantizeQ8Params), optionally RMS-normed on the way. A row's words depend on that
// row alone (the norm's sum of squares in rmsnorm_f32's fixed order), so its products are the same
// bits in any batch. With the norm, v = (x * scale) * weight as rmsnorm_f32 writes it: the bits
// quantized are those rmsnorm_f32 would have stored.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float weight[]; };
layout(std430, binding = 2) writeonly buffer Out { uint outw[]; };
layout(push_constant) uniform PushBlock { QuantizeQ8Params p; };

#include "row_sum_squares.glsl"

void main() {
  const uint row = gl_WorkGroupID.y;
  const uint lid = gl_LocalInvocationID.x;
  const uint xb = row * p.x_stride;
  // rmsnorm_f32's scale, the same expression (p.norm is uniform: every invocation reduces or none).
  const float scale = p.norm != 0u ? 1.0 / sqrt(row_sum_squares(xb, p.cols) / float(p.cols) + p.eps) : 1.0;
  const uint ob = row * p.out_stride;
  for (uint b = lid; b < p.cols / 32u; b += 64u) {
    float v[32];
    float amax = 0.0;
    [[unroll]] for (uint i = 0u; i < 32u; ++i) {
      const uint j = 32u * b + i;
      v[i] = p.norm != 0u ? (x[xb + j] * scale) * weight[j] : x[xb + j];
      amax = max(amax, abs(v[i]));
    }
    // ggml's q8 scale: d = amax / 127 and values round(v * (1 / d)) (ties to even here).
    const float d = amax / 127.0;
    const float inv = d != 0.0 ? 1.0 / d : 0.0;
    int sums[2] = int[2](0, 0);
    [[unroll]] for (uint w = 0u; w < 8u; ++w) {
      uint word = 0u;
      [[unroll]] for (uint e = 0u; e < 4u; ++e) {
        const int q = clamp(int(roundEven(v[4u * w + e] * inv)), -127, 127);
        sums[w >> 2] += q;
        word |= (uint(q) & 255u) << (8u * e);
      }
      outw[ob + VKS_Q8_BLOCK_WORDS * b + w] = word;
    }
    outw[ob + VKS_Q8_BLOCK_WORDS * b + 8u] = floatBitsToUint(d);
    outw[ob + VKS_Q8_BLOCK_WORDS * b + 9u] = uint(sums[0]);
    outw[ob + VKS_Q8_BLOCK_WORDS * b + 10u] = uint(sums[1]);
    outw[ob + VKS_Q8_BLOCK_WORDS * b + 11u] = 0u;
  }
}
