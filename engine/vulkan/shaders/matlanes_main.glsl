// main() of matlanes_<type>: the weight-matrix kernels for GPUs (Ops' MatmulFamily::kLanes), for
// decode batches and prefill tiles alike. A workgroup of LOCAL_SIZE = VKS_LANES invocations computes
// ROW_SLOTS = VKS_LANES_ROWS rows for up to VKS_LANES_TOKEN_TILE tokens, or the pipeline's wide
// tile for larger batches (grid y walks token tiles),
// its lanes splitting every row between them (lanes_body.glsl). CPU devices use matvec_/matmul_,
// where each invocation streams its own rows (common_matmul.glsl explains why lavapipe wants that).
// The includer defines WTYPE_<type>, LOCAL_SIZE (VKS_LANES) and ROW_SLOTS (VKS_LANES_ROWS) and
// includes common_matmul.glsl first. matdot_<type> (Ops' MatmulFamily::kDot) is this main() with
// INT8_DOT defined: x is Q8 rows and each group meets it in integers (group_dot.glsl).
// The wide token tile (8, 16 or 32) for batches of more than VKS_LANES_TOKEN_TILE tokens: see
// shader_params.h. A specialization constant: the variants a pipeline never runs are compiled out.
layout(constant_id = 2) const uint WIDE_TILE = VKS_LANES_TOKEN_TILE;
// Per (row, token) partial sums, then (RMSNORM_PROLOGUE) per token sums of squares of x, SUM_STRIDE
// floats per sum (lanes_body.glsl): sized by the specialization constants, so pipelines without
// the prologue and wide tiles keep their 8 KiB (workgroups per GPU core).
#define SUM_STRIDE (LOCAL_SIZE + 1u)
shared float lane_sums[(ROW_SLOTS + RMSNORM_PROLOGUE) * WIDE_TILE * SUM_STRIDE];

// The RMSNorm prologue: every workgroup reads all of x anyway (its lanes split each row), so it sums
// x^2 on the way (per lane in the order it reads x, then the fixed tree), multiplies x by the norm
// weights as it loads it, and scales each dot product by 1 / sqrt(mean(x^2) + eps): one dispatch and
// barrier less than rmsnorm_f32 before the product, the same result up to rounding (the scale
// multiplies the sum instead of each x), and still the same bits for a token in any batch.
// Binding 4: the norm weights (f32, cols of them, from texel 0). Declared in every lanes pipeline;
// Ops binds x there when the prologue is off.
layout(binding = 4) uniform usamplerBuffer norm_texels;
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
#define DOT_WIDE 0
#include "lanes_body.glsl"
#define DOT_NAME lanes_tokens_8
#define DOT_R ROW_SLOTS
#define DOT_T 8u
#define DOT_WIDE 0
#include "lanes_body.glsl"
#define DOT_NAME lanes_tokens_16
#define DOT_R ROW_SLOTS
#define DOT_T 16u
#define DOT_WIDE 1
#include "lanes_body.glsl"
#define DOT_NAME lanes_tokens_32
#define DOT_R ROW_SLOTS
#define DOT_T 32u
#define DOT_WIDE 1
#include "lanes_body.glsl"
#undef NORM_X
#undef NORM_X_SCALAR

void main() {
  // Whole workgroups return (before any barrier): a mul_mat_id slot of another part, or a tile
  // past its group's rows.
  if (!enter_workgroup()) return;
  const uint tile = VKS_LANES_TILE_FOR(wg_tokens, WIDE_TILE);
  const uint t0 = gl_WorkGroupID.y * tile;
  if (t0 >= wg_tokens) return;
  const uint nt = min(wg_tokens - t0, tile);
  // A variant per tile size, the smallest that holds the tile's tokens: on a GPU the extra tokens of
  // a short tile cost arithmetic, not bandwidth, and each variant is another compile at start-up.
  if (nt == 1u) {
    lanes_tokens_1(t0);
  } else if (nt <= 8u || WIDE_TILE == 8u) {
    lanes_tokens_8(t0);
  } else if (nt <= 16u || WIDE_TILE == 16u) {
    lanes_tokens_16(t0);
  } else {
    lanes_tokens_32(t0);
  }
}
