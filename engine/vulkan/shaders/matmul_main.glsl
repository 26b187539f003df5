// main() of matmul_<type>: prefill batches, tiles of VKS_MATMUL_ROWS_PER_GROUP rows x
// VKS_MATMUL_TOKEN_TILE tokens per workgroup (grid y walks the token tiles).
#define DOT_NAME dot_8_8
#define DOT_R 8u
#define DOT_T 8u
#include "matmul_body.glsl"

void main() { dot_8_8(gl_WorkGroupID.y * VKS_MATMUL_TOKEN_TILE); }
