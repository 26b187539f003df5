// main() of matvec_<type>: decode-sized batches. A workgroup covers LOCAL_SIZE x ROW_SLOTS rows
// (one per invocation and slot, see shader_params.h) and up to VKS_MATVEC_TOKEN_TILE tokens; the token
// blocking is picked by the token count so that no work is spent on absent tokens.
#define DOT_NAME dot_tokens_1
#define DOT_R ROW_SLOTS
#define DOT_T 1u
#include "matmul_body.glsl"
#define DOT_NAME dot_tokens_2
#define DOT_R ROW_SLOTS
#define DOT_T 2u
#include "matmul_body.glsl"
#define DOT_NAME dot_tokens_4
#define DOT_R ROW_SLOTS
#define DOT_T 4u
#include "matmul_body.glsl"
#define DOT_NAME dot_tokens_8
#define DOT_R ROW_SLOTS
#define DOT_T 8u
#include "matmul_body.glsl"

void main() {
  const uint t0 = gl_WorkGroupID.y * VKS_MATVEC_TOKEN_TILE;
  if (!enter_workgroup() || t0 >= wg_tokens) return;
  const uint nt = min(wg_tokens - t0, VKS_MATVEC_TOKEN_TILE);
  if (nt == 1u) {
    dot_tokens_1(t0);
  } else if (nt == 2u) {
    dot_tokens_2(t0);
  } else if (nt <= 4u) {
    dot_tokens_4(t0);
  } else {
    dot_tokens_8(t0);
  }
}
