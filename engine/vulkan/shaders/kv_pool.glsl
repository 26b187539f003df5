// Reading a layer's K or V pool of either type (attn_params.h's layout) by pair index: pair `at`
// holds values 2at and 2at + 1 of the flattened [n_slots][kv_dim] array (at = slot * kv_dim/2 +
// column/2, the F16 pool's uint index). Q8_0 values come back as scale * int8, the value the CPU
// side (cpu::quantize_kv_q8) decodes too. The includer binds `p` (a struct with q8_scales_at).

int kv_byte(uint word, uint i) { return int(word << (24u - 8u * i)) >> 24; }

float kv_q8_scale(usamplerBuffer pool, uint at) {
  const uint s_at = p.q8_scales_at + (at >> 4);  // 16 pairs a block
  return uintBitsToFloat(texelFetch(pool, int(s_at >> 2))[s_at & 3u]);
}

// One pair of a Q8_0 pool.
vec2 kv_q8_pair(usamplerBuffer pool, uint at) {
  const uint word = texelFetch(pool, int(at >> 3))[(at >> 1) & 3u];  // two pairs a uint
  const uint b = (at & 1u) * 2u;
  return vec2(float(kv_byte(word, b)), float(kv_byte(word, b + 1u))) * kv_q8_scale(pool, at);
}

// The 16 pairs of the Q8_0 block that starts at pair `at` (a multiple of 16): two texels of quants
// and one scale, where an F16 pool takes four texels (on lavapipe a load costs per instruction).
// Each value is float(int8) * scale, as kv_q8_pair gives it.
void kv_q8_block(usamplerBuffer pool, uint at, out vec2 r[16]) {
  const uvec4 t0 = texelFetch(pool, int(at >> 3));
  const uvec4 t1 = texelFetch(pool, int((at >> 3) + 1u));
  const float d = kv_q8_scale(pool, at);
  [[unroll]] for (uint u = 0u; u < 16u; ++u) {
    const uint word = u < 8u ? t0[u >> 1] : t1[(u - 8u) >> 1];
    const uint b = (u & 1u) * 2u;
    r[u] = vec2(float(kv_byte(word, b)), float(kv_byte(word, b + 1u))) * d;
  }
}
