// main() of matmul_<type>: prefill batches, tiles of LOCAL_SIZE x ROW_SLOTS rows x
// VKS_MATMUL_TOKEN_TILE tokens per workgroup (grid y walks the token tiles).
#define DOT_NAME dot_tokens_8
#define DOT_R ROW_SLOTS
#define DOT_T 8u
#include "matmul_body.glsl"

void main() {
  const uint t0 = gl_WorkGroupID.y * VKS_MATMUL_TOKEN_TILE;
  if (!enter_workgroup() || t0 >= wg_tokens) return;
  dot_tokens_8(t0);
}
