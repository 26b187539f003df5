// main() of matmul_<type>: prefill batches, tiles of VKS_MATMUL_ROWS_PER_GROUP rows x
// VKS_MATMUL_TOKEN_TILE tokens per workgroup (grid y walks the token tiles).
#define DOT_NAME dot_2_8
#define DOT_R 2u
#define DOT_T 8u
#include "matmul_body.glsl"

void main() {
  const uint t0 = gl_WorkGroupID.y * VKS_MATMUL_TOKEN_TILE;
  dot_2_8(0u, t0, min(p.n_tokens - t0, VKS_MATMUL_TOKEN_TILE));
}
