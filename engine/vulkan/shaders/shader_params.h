// Push-constant parameter structs shared by C++ and GLSL: the one definition of every kernel's
// parameters. THE PATTERN (other headers such as shaders/attn_params.h follow it):
//   * Included from C++ (`#include "engine/vulkan/shaders/shader_params.h"`) and from GLSL
//     (`#include "shader_params.h"`, compiled with -I engine/vulkan/shaders and
//     GL_GOOGLE_include_directive).
//   * Members are 4-byte scalars only (uint, int, float), so the C++ layout equals GLSL's std430
//     push-constant layout with no padding rules to think about; no vec/bool/arrays.
//   * Each struct is `struct XxxParams { ... };` in both languages; in GLSL the kernel declares
//       layout(push_constant) uniform PushBlock { XxxParams p; };
//   * At the end, under __cplusplus: a static_assert on each size (<= 128 bytes, Vulkan's guaranteed minimum);
//     the checked dispatch also compares sizeof(Params) with the size the SPIR-V declares.
#ifndef VKS_SHADER_PARAMS_H
#define VKS_SHADER_PARAMS_H

#ifdef __cplusplus
#include <cstdint>
namespace vks::vk::shader {
using uint = uint32_t;
#endif

// matvec_<type> / matmul_<type> (the rows family, CPU devices' default): a workgroup is
// VKS_ROWS_LOCAL_SIZE invocations, one SIMD vector of lavapipe on AVX2, each carrying ROW_SLOTS
// rows (per type: VKS_ROW_SLOTS_<TYPE> below), so it covers VKS_ROWS_LOCAL_SIZE * row_slots rows.
// Small groups waste little on small matrices: a 64-row matrix in 256-row groups computed four
// times its rows (rows past the end compute copies of the last one). Grids: x = ceil(rows / rows
// per group), y = ceil(n_tokens / TOKEN_TILE) (row groups past 65,535 continue in z). Both
// accumulate every output in the same order (see common_matmul.glsl); matlanes_<type> (below) has
// an order of its own.
#define VKS_ROWS_LOCAL_SIZE 8
// The specialization constant id of halves.glsl's HALVES_BY_INTEGER_STEPS, which Kernel::create
// sets on every pipeline (above the ids 0.. a kernel's own constants take).
#define VKS_HALVES_CONSTANT_ID 31
// ROW_SLOTS per kernel suffix, the one definition that matvec_/matmul_<suffix>.comp and
// DeviceFormat::row_slots both use. More rows share each x load; Q2_K, Q3_K and the legacy 5-bit
// types stay at 4 because their larger decode state compiles slowly at 16. Q5_K (most of a Q5_K_M
// file) takes 8: its matvecs ran about 20% faster on lavapipe than at 4 (vks_bench_vulkan_kernels,
// 5632x2048 at one token, three runs each alternating: 1.43-3.32x Q4_0's time against 1.76-3.48x),
// for 3-3.5 s more of pipeline build on a cold cache. Q6_K (the output and half the down
// projections of a Q4_K_M file) takes 16 since its decode became byte-wise (weight_blocks.glsl): a
// pure Q6_K TinyLlama decodes at 0.73-0.74x Q4_0's speed by process CPU time against 0.67 at 8 rows
// and 0.64-0.65 with the old decode at 8 (vks_bench_vulkan_versus, two runs each); 32 rows were
// slower again (1.54-1.58x Q4_0's time on 32000x2048; presumably spills). Cost: a Q4_K_M model's cold pipeline build 19-21 s -> 24-34 s.
#define VKS_ROW_SLOTS_F32 8
#define VKS_ROW_SLOTS_F16 8
#define VKS_ROW_SLOTS_Q8_0 16
#define VKS_ROW_SLOTS_Q4_0 16
#define VKS_ROW_SLOTS_Q4_1 4
#define VKS_ROW_SLOTS_Q5_0 4
#define VKS_ROW_SLOTS_Q5_1 4
#define VKS_ROW_SLOTS_Q2_K 4
#define VKS_ROW_SLOTS_Q3_K 4
#define VKS_ROW_SLOTS_Q4_K 16
#define VKS_ROW_SLOTS_Q5_K 8
#define VKS_ROW_SLOTS_Q6_K 16
#define VKS_ROW_SLOTS_MXFP4 16
#define VKS_ROW_SLOTS_IQ4_NL 16
#define VKS_ROW_SLOTS_IQ4_XS 16
#define VKS_MATVEC_TOKEN_TILE 8
#define VKS_MATMUL_TOKEN_TILE 8
// matlanes_<type> (the GPU family, see matlanes_main.glsl): VKS_LANES invocations share each row,
// a workgroup computes VKS_LANES_ROWS rows for up to VKS_LANES_TOKEN_TILE tokens.
#define VKS_LANES 64
#define VKS_LANES_ROWS 4
#define VKS_LANES_TOKEN_TILE 8
// A batch of more than VKS_LANES_TOKEN_TILE tokens (prefill) goes in tiles of the pipeline's wide
// tile instead (its specialization constant 2: 8, 16 or 32; Ops::lanes_wide_tile): every workgroup
// dequantizes its rows once per 16 or 32 tokens instead of once per 8. The sums are the same bits
// for every tile (lanes_body.glsl); GPUs take 16, CPU devices 8 (vk::lanes_wide_tile_for).
#define VKS_LANES_WIDE_TILES_MAX 32
// Tokens per workgroup (grid y tile) of a lanes dispatch of n_tokens, for a pipeline of wide tile `wide`.
#define VKS_LANES_TILE_FOR(n_tokens, wide) ((n_tokens) > VKS_LANES_TOKEN_TILE ? (wide) : VKS_LANES_TOKEN_TILE)

// embed_<type>: out[t][0..cols) = row tokens[t] of the table, for tokens in
// [row_begin, row_begin + row_count) (the rows of one part of a split table); others untouched.
struct EmbedParams {
  uint n_tokens;
  uint cols;
  uint row_begin;
  uint row_count;
  uint row_stride;   // table row stride in the kernel's storage unit (see DeviceMatrix)
  uint d_offset;     // quantized types: uint index of the scale plane in the part buffer
  uint out_stride;   // floats between consecutive output rows
  uint pad0;
};

// rmsnorm_f32: out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, one workgroup per row (grid y)
// and per sub-row h (grid x, h * head_stride floats into the row: per-head norms; 1 group, 0 otherwise).
// l2norm_f32 the same with out[r] = x[r] / max(sqrt(sum(x[r]^2)), eps) and no weight.
struct RmsNormParams {
  uint n_rows;
  uint dim;
  uint x_stride;
  uint out_stride;
  float eps;
  uint head_stride;
  uint pad1;
  uint pad2;
};

// quantize_q8_f32: x [n_rows][x_stride floats] (or rmsnorm(x) with weights and eps where norm is
// 1, as rmsnorm_f32 computes it) into Q8 rows [n_rows][out_stride words], the input of the
// dot-product kernels (matdot_<type>): per 32 values (cols % 32 == 0) 8 words of int8 values
// round(v / d), d = max|v| / 127, then d (f32), the sums of the int8 values of elements 0..15 and
// 16..31 (int32) and a zero word. One workgroup of 64 per row (grid y).
#define VKS_Q8_BLOCK_WORDS 12u
struct QuantizeQ8Params {
  uint n_rows;
  uint cols;
  uint x_stride;
  uint out_stride;
  float eps;
  uint norm;
  uint pad1;
  uint pad2;
};

// matvec_<type> / matmul_<type> / matlanes_<type>: y[t][y_offset + r] (+)= dot(W[r], x[t]) for r < rows,
// t < n_tokens. W is one part of a DeviceMatrix (rows of this part only).
struct MatmulParams {
  uint rows;          // rows of this part (the SwiGLU epilogue: outputs, up_rows_at below)
  uint cols;          // K
  uint n_tokens;
  uint row_stride;    // W row stride in the storage unit (floats, halves, or uints of quants)
  uint d_offset;      // quantized types: uint index of the scale plane in the part buffer
  uint x_stride;      // floats between tokens in x
  uint y_stride;      // floats between tokens in y
  uint y_offset;      // first output row of this part
  uint accumulate;    // 1: y += W x (fused residual add), 0: y = W x
  uint x_offset;      // first texel (16 bytes) of x in its buffer (x is read through a texel view)
  // The pipelines specialized with SWIGLU_EPILOGUE = 1 (common_matmul.glsl) compute, over a gate|up
  // stack, y[t][y_offset + h] = silu(dot(W[h], x[t])) * dot(W[h + up_rows_at], x[t]) for h < rows
  // (accumulate is 0); the others ignore it (0).
  uint up_rows_at;
  // The lanes pipelines specialized with RMSNORM_PROLOGUE = 1 (matlanes_main.glsl) multiply by
  // rmsnorm(x[t]) instead of x[t], with this eps and the norm weights of binding 4.
  float norm_eps;
  // The pipelines specialized with MUL_MAT_ID = 1 (common_matmul.glsl): this part of W holds experts
  // [expert_begin, expert_end), expert_rows weight rows each (a gate|up block's 2 * rows with the
  // SwiGLU epilogue); rows, x_offset, y_offset and up_rows_at are one expert's. Others: 0.
  uint expert_rows;
  uint expert_begin;
  uint expert_end;
  uint pad0;
};

// swiglu_f32: out[r][i] = silu(gate[r][i]) * up[r][i] (geglu_f32, swiglu_oai_f32: the other gated
// activations of swiglu.glsl); add_f32: out[r][i] = a[r][i] + b[r][i];
// r < n_rows, i < cols. gate/a and up/b share in_stride (floats between rows).
struct ElementwiseParams {
  uint n_rows;
  uint cols;
  uint in_stride;
  uint out_stride;
};

// scale_f32: x[r][i] *= value (Gemma's embedding scale); softcap_f32: x[r][i] = value *
// tanh(x[r][i] / value) (logit soft-capping). In place, r < n_rows, i < cols.
struct ScalarMapParams {
  uint n_rows;
  uint cols;
  uint stride;
  float value;
};

// sigmoid_gate_f32: x[r][i] *= sigmoid(gate[r][i]), or sigmoid(gate[r][0]) with broadcast 1;
// r < n_rows, i < cols.
struct SigmoidGateParams {
  uint n_rows;
  uint cols;
  uint x_stride;
  uint gate_stride;
  uint broadcast;
};

// argmax_f32: out[r] = index of the largest x[r][i] (lowest index on ties, NaN never wins).
// topk_f32: out_idx[r][j], out_val[r][j] for j < k, by value descending then index ascending.
struct ReduceRowParams {
  uint n_rows;
  uint cols;
  uint x_stride;
  uint k;
};

// lavapipe (llvmpipe) silently ends an invocation's loops once it has run this many loop
// iterations in all, nested loops included, each loop's exit test counted too. Every kernel keeps
// its count under it for every shape it accepts (attention_max_keys, topk_loop_iterations).
#define VKS_LAVAPIPE_LOOP_BUDGET 65535u

#define VKS_TOPK_MAX 64
// Invocations per topk row (a power of two, at most the 128 every device allows) and elements each
// takes per loop iteration: k rounds of ceil(cols / (VKS_TOPK_WG * VKS_TOPK_PER_STEP)) iterations.
#define VKS_TOPK_WG 128
#define VKS_TOPK_PER_STEP 2

#ifdef __cplusplus
static_assert(sizeof(EmbedParams) <= 128 && sizeof(EmbedParams) % 4 == 0);
static_assert(sizeof(RmsNormParams) <= 128 && sizeof(RmsNormParams) % 4 == 0);
static_assert(sizeof(MatmulParams) <= 128 && sizeof(MatmulParams) % 4 == 0);
static_assert(sizeof(QuantizeQ8Params) <= 128 && sizeof(QuantizeQ8Params) % 4 == 0);
static_assert(sizeof(ElementwiseParams) <= 128 && sizeof(ElementwiseParams) % 4 == 0);
static_assert(sizeof(ReduceRowParams) <= 128 && sizeof(ReduceRowParams) % 4 == 0);
static_assert(sizeof(SigmoidGateParams) <= 128 && sizeof(SigmoidGateParams) % 4 == 0);
}  // namespace vks::vk::shader
#endif

#endif  // VKS_SHADER_PARAMS_H
