// Reading a layer's K or V pool of any type (attn_params.h's layout) by pair index: pair `at`
// holds values 2at and 2at + 1 of the flattened [n_slots][kv_dim] array (at = slot * kv_dim/2 +
// column/2, the F16 pool's uint index). Quantized values come back as scale * quant, the value the
// CPU side (cpu::quantize_kv) decodes too. `type` is a pool's VKS_KV_* (a specialization constant
// at every call, so each branch below folds away) and `scales_at` its scale plane's uint index.
#include "halves.glsl"

int kv_byte(uint word, uint i) { return int(word << (24u - 8u * i)) >> 24; }
float kv_nibble(uint word, uint i) { return float(int((word >> (4u * i)) & 15u) - 8); }

float kv_scale(usamplerBuffer pool, uint scales_at, uint at) {
  const uint s_at = scales_at + (at >> 4);  // 16 pairs a block
  return uintBitsToFloat(texelFetch(pool, int(s_at >> 2))[s_at & 3u]);
}

// One pair of a pool.
vec2 kv_pair(usamplerBuffer pool, uint type, uint scales_at, uint at) {
  if (type == VKS_KV_Q8_0) {
    const uint word = texelFetch(pool, int(at >> 3))[(at >> 1) & 3u];  // two pairs a uint
    const uint b = (at & 1u) * 2u;
    return vec2(float(kv_byte(word, b)), float(kv_byte(word, b + 1u))) * kv_scale(pool, scales_at, at);
  }
  if (type == VKS_KV_Q4_0) {
    const uint word = texelFetch(pool, int(at >> 4))[(at >> 2) & 3u];  // four pairs a uint
    const uint n = (at & 3u) * 2u;
    return vec2(kv_nibble(word, n), kv_nibble(word, n + 1u)) * kv_scale(pool, scales_at, at);
  }
  return unpack_halves(texelFetch(pool, int(at >> 2))[at & 3u]);
}

// The 16 pairs of the quantized block that starts at pair `at` (a multiple of 16): Q8_0's two
// texels of quants or Q4_0's one, and one scale, where an F16 pool takes four texels (on lavapipe a
// load costs per instruction). Each value as kv_pair gives it.
void kv_block(usamplerBuffer pool, uint type, uint scales_at, uint at, out vec2 r[16]) {
  const float d = kv_scale(pool, scales_at, at);
  if (type == VKS_KV_Q4_0) {
    const uvec4 t = texelFetch(pool, int(at >> 4));
    [[unroll]] for (uint u = 0u; u < 16u; ++u) {
      const uint word = t[u >> 2];
      const uint n = (u & 3u) * 2u;
      r[u] = vec2(kv_nibble(word, n), kv_nibble(word, n + 1u)) * d;
    }
    return;
  }
  const uvec4 t0 = texelFetch(pool, int(at >> 3));
  const uvec4 t1 = texelFetch(pool, int((at >> 3) + 1u));
  [[unroll]] for (uint u = 0u; u < 16u; ++u) {
    const uint word = u < 8u ? t0[u >> 1] : t1[(u - 8u) >> 1];
    const uint b = (u & 1u) * 2u;
    r[u] = vec2(float(kv_byte(word, b)), float(kv_byte(word, b + 1u))) * d;
  }
}
