// main() of matlanes_<type>: the weight-matrix kernels for GPUs (Ops' MatmulFamily::kLanes), for
// decode batches and prefill tiles alike. A workgroup of LOCAL_SIZE = VKS_LANES invocations computes
// ROW_SLOTS = VKS_LANES_ROWS rows for up to VKS_LANES_TOKEN_TILE tokens (grid y walks token tiles),
// its lanes splitting every row between them (lanes_body.glsl). CPU devices use matvec_/matmul_,
// where each invocation streams its own rows (common_matmul.glsl explains why lavapipe wants that).
// The includer defines WTYPE_<type>, LOCAL_SIZE (VKS_LANES) and ROW_SLOTS (VKS_LANES_ROWS) and
// includes common_matmul.glsl first.
// Per (row, token) partial sums, then (RMSNORM_PROLOGUE) per token sums of squares of x: sized by the
// specialization constant, so pipelines without the prologue keep their 8 KiB (workgroups per GPU core).
shared float lane_sums[(ROW_SLOTS + RMSNORM_PROLOGUE) * VKS_LANES_TOKEN_TILE * LOCAL_SIZE];

// The RMSNorm prologue: every workgroup reads all of x anyway (its lanes split each row), so it sums
// x^2 on the way (per lane in the order it reads x, then the fixed tree), multiplies x by the norm
// weights as it loads it, and scales each dot product by 1 / sqrt(mean(x^2) + eps): one dispatch and
// barrier less than rmsnorm_f32 before the product, the same result up to rounding (the scale
// multiplies the sum instead of each x), and still the same bits for a token in any batch.
// Binding 3: the norm weights (f32, cols of them, from texel 0). Declared in every lanes pipeline;
// Ops binds x there when the prologue is off.
layout(binding = 3) uniform usamplerBuffer norm_texels;
vec4 norm_weights(uint texel) { return uintBitsToFloat(texelFetch(norm_texels, int(texel))); }
#define NORM_X(v, t, texel)                                                                  \
  if (RMSNORM_PROLOGUE != 0u) {                                                              \
    [[unroll]] for (uint e_ = 0u; e_ < 4u; ++e_) sumsq[t] = fma(v[e_], v[e_], sumsq[t]);     \
    v *= norm_weights(texel);                                                                \
  }
#define NORM_X_SCALAR(v, t, col)                                                             \
  if (RMSNORM_PROLOGUE != 0u && col < p.cols) {                                              \
    sumsq[t] = fma(v, v, sumsq[t]);                                                          \
    v *= norm_weights(col >> 2)[col & 3u];                                                   \
  }

#define DOT_NAME lanes_tokens_1
#define DOT_R ROW_SLOTS
#define DOT_T 1u
#include "lanes_body.glsl"
#define DOT_NAME lanes_tokens_8
#define DOT_R ROW_SLOTS
#define DOT_T 8u
#include "lanes_body.glsl"
#undef NORM_X
#undef NORM_X_SCALAR

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
