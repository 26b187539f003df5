// main() of matlanes_<type>: the weight-matrix kernels for GPUs (Ops' MatmulFamily::kLanes), for
// decode batches and prefill tiles alike. A workgroup of LOCAL_SIZE = VKS_LANES invocations computes
// ROW_SLOTS = VKS_LANES_ROWS rows for up to VKS_LANES_TOKEN_TILE tokens (grid y walks token tiles),
// its lanes splitting every row between them (lanes_body.glsl). CPU devices use matvec_/matmul_,
// where each invocation streams its own rows (common_matmul.glsl explains why lavapipe wants that).
// The includer defines WTYPE_<type>, LOCAL_SIZE (VKS_LANES) and ROW_SLOTS (VKS_LANES_ROWS) and
// includes common_matmul.glsl first.
shared float lane_sums[ROW_SLOTS * VKS_LANES_TOKEN_TILE * LOCAL_SIZE];

#define DOT_NAME lanes_tokens_1
#define DOT_R ROW_SLOTS
#define DOT_T 1u
#include "lanes_body.glsl"
#define DOT_NAME lanes_tokens_8
#define DOT_R ROW_SLOTS
#define DOT_T 8u
#include "lanes_body.glsl"

void main() {
  const uint t0 = gl_WorkGroupID.y * VKS_LANES_TOKEN_TILE;
  const uint nt = min(p.n_tokens - t0, VKS_LANES_TOKEN_TILE);
  // Two variants only: on a GPU the extra tokens of a short tile cost arithmetic, not bandwidth,
  // and each variant is another compile at start-up.
  if (nt == 1u) {
    lanes_tokens_1(t0);
  } else {
    lanes_tokens_8(t0);
  }
}
