#version 450
// probe_coalread_u32 (bench only): the "GPU idiom" read pattern, neighbouring invocations reading
// neighbouring uvec4s, each striding by the whole grid. Best on real GPUs, worst on lavapipe.
// grid x = n_groups (64 invocations each); every invocation reads ceil(n_vec4 / (64 * n_groups)).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Data { uvec4 data[]; };
layout(std430, binding = 1) writeonly buffer Out { uint outv[]; };
layout(push_constant) uniform PushBlock { uint n_vec4; uint run_vec4; uint pad0; uint pad1; } p;

void main() {
  const uint inv = gl_GlobalInvocationID.x;
  const uint stride = gl_NumWorkGroups.x * 64u;
  uvec4 acc = uvec4(0);
  for (uint i = inv; i < p.n_vec4; i += stride) acc ^= data[i];
  outv[inv] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}
