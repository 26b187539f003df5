#version 450
// probe_runread_u32 (bench only): the device's streaming-read ceiling. Each invocation streams its
// own contiguous run of `run_vec4` uvec4s and XORs them; workgroups of 8 (lavapipe's SIMD width;
// PEERS.md: the fastest pattern there). grid x = ceil(n_vec4 / run_vec4 / 8).
layout(local_size_x = 8) in;
layout(std430, binding = 0) readonly buffer Data { uvec4 data[]; };
layout(std430, binding = 1) writeonly buffer Out { uint outv[]; };
layout(push_constant) uniform PushBlock { uint n_vec4; uint run_vec4; uint pad0; uint pad1; } p;

void main() {
  const uint inv = gl_GlobalInvocationID.x;
  const uint begin = inv * p.run_vec4;
  if (begin >= p.n_vec4) return;
  const uint end = min(begin + p.run_vec4, p.n_vec4);
  uvec4 acc = uvec4(0);
  for (uint i = begin; i < end; ++i) acc ^= data[i];  // run_vec4 < 65,535 (lavapipe's loop limit)
  outv[inv] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}
