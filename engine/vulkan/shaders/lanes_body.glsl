// Generates `void DOT_NAME(uint t0)` for matlanes_<type> and matdot_<type> (INT8_DOT: each group
// through group_dot.glsl instead of the chunk loop below): the DOT_R (= ROW_SLOTS) rows of this
// workgroup (rows group * DOT_R + r, the group numbered across grid x and z: z carries what exceeds
// the 65,535 workgroups a grid dimension is guaranteed; the SwiGLU epilogue maps them as below) for
// tokens t0 .. t0 + DOT_T - 1. Included once per variant.
// Lane l (the invocation) takes groups l, l + LOCAL_SIZE, l + 2 * LOCAL_SIZE, ... of every row: in
// one pass the lanes read LOCAL_SIZE neighbouring groups of a row, so the loads coalesce on a GPU.
// Each lane keeps one fma chain per (row, token) over its groups, ascending, chunk and element order
// inside a group as in matmul_body.glsl; the F32/F16 tail chunk ends lane 0's chain. The lanes' sums
// are then added in a fixed tree through `lane_sums`. None of this depends on DOT_T or on where a
// token sits in the batch, so every token's outputs are the same bits for 1..8 tokens and any tile.
// With SWIGLU_EPILOGUE (see common_matmul.glsl) rows 0 .. DOT_R / 2 - 1 are gate rows and the others the up
// rows of the same outputs; the store combines each pair.
void DOT_NAME(uint t0) {
  const uint lane = gl_LocalInvocationID.x;
  float acc[DOT_R * DOT_T];
  [[unroll]] for (uint i = 0u; i < DOT_R * DOT_T; ++i) acc[i] = 0.0;
  float sumsq[DOT_T];  // RMSNORM_PROLOGUE: this lane's share of each token's sum of x^2
  [[unroll]] for (uint t = 0u; t < DOT_T; ++t) sumsq[t] = 0.0;
  const uint first_row = row_group() * slot_outputs(DOT_R);
  uint row[DOT_R];
  [[unroll]] for (uint r = 0u; r < DOT_R; ++r) row[r] = slot_row(first_row, r, DOT_R, 1u);
  uint xb[DOT_T];  // first x element (INT8_DOT: word of its Q8 row) of each token (a multiple of 4)
  [[unroll]] for (uint t = 0u; t < DOT_T; ++t) xb[t] = min(t0 + t, wg_tokens - 1u) * p.x_stride;
  const uint n_groups = full_chunks() / GROUP_CHUNKS;
  for (uint g = lane; g < n_groups; g += LOCAL_SIZE) {
    WGroup wg[DOT_R];
    [[unroll]] for (uint r = 0u; r < DOT_R; ++r) {
      wg[r] = load_group(row[r], g, load_side(row[r], g & ~7u), g & 7u);
    }
#ifdef INT8_DOT
#include "group_dot.glsl"
#else
    [[unroll]] for (uint k = 0u; k < GROUP_CHUNKS; ++k) {
#if DOT_WIDE
#include "chunk_fma_wide.glsl"
#else
#include "chunk_fma.glsl"
#endif
    }
#endif
  }
#if defined(WTYPE_F32) || defined(WTYPE_F16)
  if (has_tail_chunk() && lane == 0u) {
#include "tail_chunk_fma.glsl"
  }
#endif
  // Fixed tree: at each level lane l < s adds lane l + s's sum to its own (sums of squares last).
  const uint n_sums = RMSNORM_PROLOGUE != 0u ? (DOT_R + 1u) * DOT_T : DOT_R * DOT_T;
  [[unroll]] for (uint i = 0u; i < DOT_R * DOT_T; ++i) lane_sums[i * SUM_STRIDE + lane] = acc[i];
  if (RMSNORM_PROLOGUE != 0u) {
    [[unroll]] for (uint t = 0u; t < DOT_T; ++t) lane_sums[(DOT_R * DOT_T + t) * SUM_STRIDE + lane] = sumsq[t];
  }
  barrier();
#if DOT_WIDE
  // Wide tiles have 2-5 sums per lane: each invocation adds up whole sums, the 64 partials of one in
  // its registers in the same tree (the same additions of the same operands: the same bits), one
  // barrier instead of one per level with most lanes idle. SUM_STRIDE = LOCAL_SIZE + 1 puts the
  // partials that neighbouring invocations read at once in different banks. Sum i ends in its lane
  // 0 slot, where the tree leaves it.
  for (uint i = lane; i < n_sums; i += LOCAL_SIZE) {
    float v[LOCAL_SIZE];
    [[unroll]] for (uint l = 0u; l < LOCAL_SIZE; ++l) v[l] = lane_sums[i * SUM_STRIDE + l];
    [[unroll]] for (uint s = LOCAL_SIZE / 2u; s > 0u; s >>= 1) {
      [[unroll]] for (uint l = 0u; l < s; ++l) v[l] = v[l] + v[l + s];
    }
    lane_sums[i * SUM_STRIDE] = v[0];
  }
  barrier();
#else
  [[unroll]] for (uint s = LOCAL_SIZE / 2u; s > 0u; s >>= 1) {
    if (lane < s) {
      [[unroll]] for (uint i = 0u; i < n_sums; ++i) {
        lane_sums[i * SUM_STRIDE + lane] = lane_sums[i * SUM_STRIDE + lane] + lane_sums[i * SUM_STRIDE + lane + s];
      }
    }
    barrier();
  }
#endif
  // The outputs (row r, token t) = sum r * DOT_T + t, several per lane in wide tiles: RMSNORM_PROLOGUE
  // scales each by its token's 1 / rms, as rmsnorm_f32 computes it.
  const uint n_outputs = (SWIGLU_EPILOGUE != 0u ? DOT_R / 2u : DOT_R) * DOT_T;
  for (uint o = lane; o < n_outputs; o += LOCAL_SIZE) {
    const uint t_out = o % DOT_T;
    const uint r = o / DOT_T;
    const float scale = RMSNORM_PROLOGUE != 0u
                            ? 1.0 / sqrt(lane_sums[(DOT_R * DOT_T + t_out) * SUM_STRIDE] / float(p.cols) + p.norm_eps)
                            : 1.0;
    if (SWIGLU_EPILOGUE != 0u) {
      store(first_row + r, t0 + t_out,
            silu_times(scale * lane_sums[o * SUM_STRIDE], scale * lane_sums[(o + (DOT_R / 2u) * DOT_T) * SUM_STRIDE]));
    } else {
      store(first_row + r, t0 + t_out, scale * lane_sums[o * SUM_STRIDE]);
    }
  }
}
#undef DOT_NAME
#undef DOT_R
#undef DOT_T
#undef DOT_WIDE
