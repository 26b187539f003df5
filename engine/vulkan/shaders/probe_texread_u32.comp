#version 450
// probe_texread_u32 (bench only): probe_runread_u32's pattern (each invocation streams its own
// contiguous run of `run_vec4` uvec4s, workgroups of 8) through a uniform texel buffer, the way
// the matrix kernels read weights and x. lavapipe gathers texels as vectors but loads storage
// buffers lane by lane. grid x = ceil(n_vec4 / run_vec4 / 8).
layout(local_size_x = 8) in;
layout(binding = 0) uniform usamplerBuffer data;
layout(std430, binding = 1) writeonly buffer Out { uint outv[]; };
layout(push_constant) uniform PushBlock { uint n_vec4; uint run_vec4; uint pad0; uint pad1; } p;

void main() {
  const uint inv = gl_GlobalInvocationID.x;
  const uint begin = inv * p.run_vec4;
  if (begin >= p.n_vec4) return;
  const uint end = min(begin + p.run_vec4, p.n_vec4);
  uvec4 acc = uvec4(0);
  for (uint i = begin; i < end; ++i) acc ^= texelFetch(data, int(i));  // run_vec4 < 65,535
  outv[inv] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}
