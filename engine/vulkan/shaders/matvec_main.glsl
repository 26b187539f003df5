// main() of matvec_<type>: decode-sized batches. A workgroup covers VKS_MATVEC_ROWS_PER_GROUP rows
// (LOCAL_SIZE invocations x ROW_SLOTS rows) and up to VKS_MATVEC_TOKEN_TILE tokens; the (rows x
// tokens) blocking is picked by the token count so that one token reads all weights once.
#define DOT_NAME dot_4_1
#define DOT_R 4u
#define DOT_T 1u
#include "matmul_body.glsl"
#define DOT_NAME dot_4_2
#define DOT_R 4u
#define DOT_T 2u
#include "matmul_body.glsl"
#define DOT_NAME dot_2_4
#define DOT_R 2u
#define DOT_T 4u
#include "matmul_body.glsl"
#define DOT_NAME dot_1_8
#define DOT_R 1u
#define DOT_T 8u
#include "matmul_body.glsl"

void main() {
  const uint t0 = gl_WorkGroupID.y * VKS_MATVEC_TOKEN_TILE;
  const uint nt = min(p.n_tokens - t0, VKS_MATVEC_TOKEN_TILE);
  if (nt == 1u) {
    dot_4_1(0u, t0, nt);
  } else if (nt == 2u) {
    dot_4_2(0u, t0, nt);
  } else if (nt <= 4u) {
    dot_2_4(0u, t0, nt);
    dot_2_4(2u, t0, nt);
  } else {
    dot_1_8(0u, t0, nt);
    dot_1_8(1u, t0, nt);
    dot_1_8(2u, t0, nt);
    dot_1_8(3u, t0, nt);
  }
}
