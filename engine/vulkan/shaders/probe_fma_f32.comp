#version 450
// probe_fma_f32 (bench only): the device's FMA ceiling. Each invocation runs `iterations` rounds of
// eight independent vec4 FMA chains (64 flops per round) on registers only. grid x = n_groups.
// 64 invocations a workgroup: with 8 (lavapipe's SIMD width, as before) a GPU ran each workgroup
// in a 32-wide warp with 24 lanes idle, and the H100 "ceiling" read 8.7 TFLOP/s.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Data { vec4 seed[]; };
layout(std430, binding = 1) writeonly buffer Out { float outv[]; };
layout(push_constant) uniform PushBlock { uint iterations; uint pad0; uint pad1; uint pad2; } p;

void main() {
  const uint inv = gl_GlobalInvocationID.x;
  const vec4 m = seed[0];
  const vec4 c = seed[1];
  vec4 a0 = vec4(inv), a1 = a0 + 1.0, a2 = a0 + 2.0, a3 = a0 + 3.0;
  vec4 a4 = a0 + 4.0, a5 = a0 + 5.0, a6 = a0 + 6.0, a7 = a0 + 7.0;
  for (uint i = 0; i < p.iterations; ++i) {  // iterations < 65,535 (lavapipe's loop limit)
    a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);
    a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);
  }
  const vec4 s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
  outv[inv] = s.x + s.y + s.z + s.w;
}
