#pragma once
// Record functions for the core kernels: each records one or more checked dispatches into a
// command buffer (no barriers: the caller puts cmd.barrier(Stage::kCompute, Stage::kCompute)
// between dependent ops). Buffer views must start at a multiple of 16 bytes (activation rows of a
// model whose dims are multiples of 4 satisfy this). All activations are f32.
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/vulkan/core/buffer.h"
#include "engine/vulkan/core/command.h"
#include "engine/vulkan/core/kernel.h"
#include "engine/vulkan/kernels/device_matrix.h"

namespace vks::vk {

// Which kernels compute products with a weight matrix, chosen per device (choose_matmul_family):
enum class MatmulFamily : uint8_t {
  // matvec_/matmul_<type>: each invocation streams its own rows, and one x load serves up to 16
  // of them (CPU devices: lavapipe runs 8 invocations as one SIMD vector and loops over lanes for
  // every load, so neighbouring rows per lane beat neighbouring words per lane).
  kRows,
  // matlanes_<type>: a workgroup's 64 invocations split each row, neighbours reading neighbouring
  // 16-byte words (GPUs: coalesced loads), partial sums added in a fixed tree.
  kLanes,
  // Integer dot products (VK_KHR_shader_integer_dot_product): quantize_q8_f32 turns x into int8
  // blocks of 32 with a scale (the RMSNorm on the way where fused), then matdot_<type> multiplies
  // each group's int8 weights with them exactly in int32 and adds group_sum * scale in the lanes
  // kernels' order (shaders/group_dot.glsl), mul_mat_id products too (every row of x quantized
  // once). Quantized formats only: F32/F16/BF16 matrices run the lanes kernels. Products differ from
  // the lanes family's by x's int8 rounding (as llama.cpp's q8_1 products do); a token's bits are
  // the same in any batch.
  kDot,
};
std::string_view matmul_family_name(MatmulFamily family);
// kLanes on a GPU, kRows on a CPU device; `choice` "rows", "lanes" or "dot" forces one
// (RunnerOptions::matmul_kernels, VKSTREAM_MATMUL_KERNELS), "" or "auto" leaves it to the device.
// kDot is never chosen by itself until a GPU run measures it against kLanes (bench/real_gpu).
// Throws vks::Error(kInvalidArgument) on anything else, kUnsupported for "dot" on a device without
// integer dot products.
MatmulFamily choose_matmul_family(const DeviceInfo& device, std::string_view choice);
// Whether a family's attention and per-row sums take the GPU layout (lanes and dot) rather than the
// rows family's.
inline bool lanes_layout(MatmulFamily family) { return family != MatmulFamily::kRows; }
// Words of one Q8 row of cols values (quantize_q8_f32.comp; cols % 32 == 0).
uint32_t q8_row_words(uint64_t cols);
// The lanes family's wide token tile (Ops): 16 on a GPU, 8 on a CPU device (lavapipe compiles each
// variant for seconds and gains nothing: its invocations stream x from cache either way); `choice`
// "8", "16" or "32" forces one (VKSTREAM_LANES_TILE), "" leaves it to the device. Throws
// vks::Error(kInvalidArgument) on anything else.
uint32_t lanes_wide_tile_for(const DeviceInfo& device, std::string_view choice);

class Ops {
 public:
  // lanes_wide_tile: the kLanes kernels' token tile for batches of more than 8 tokens (8, 16 or 32;
  // shader_params.h VKS_LANES_TILE_FOR): the same bits for any, larger ones read each weight
  // fewer times per prefill token and take longer to compile (lanes_wide_tile_for picks).
  explicit Ops(KernelRegistry& kernels, MatmulFamily family = MatmulFamily::kRows, uint32_t lanes_wide_tile = 8);
  MatmulFamily matmul_family() const { return family_; }
  // The kDot family's Q8 rows of x (quantize_q8_f32): room for the most tokens times
  // q8_row_words(largest cols) words, bound once before recording. Each product writes it, then
  // reads it: it records a barrier before its quantize dispatch (a previous product's matdot may
  // still read the buffer) and one after.
  void bind_q8_scratch(BufferView scratch) { q8_scratch_ = scratch; }
  static uint64_t q8_scratch_bytes(uint32_t max_tokens, uint64_t max_cols) {
    return uint64_t{max_tokens} * q8_row_words(max_cols) * 4;
  }
  uint32_t lanes_wide_tile() const { return lanes_wide_tile_; }

  // out[t][0..cols) = table row tokens[t] (tokens: int32 [n_tokens]; out_stride floats per row).
  // One dispatch per part of the table.
  void embed(CommandBuffer& cmd, const DeviceMatrix& table, BufferView tokens, uint32_t n_tokens,
             BufferView out, uint32_t out_stride) const;

  // out[r] = rmsnorm(x[r]) * weight for r < n_rows (x, out: [n_rows][stride]; may alias).
  void rmsnorm(CommandBuffer& cmd, BufferView x, uint32_t x_stride, BufferView weight, BufferView out,
               uint32_t out_stride, uint32_t n_rows, uint32_t dim, float eps) const;

  // y[t][r] = dot(W[r], x[t]) (or y += when accumulate: a fused residual add) for t < n_tokens.
  // kRows: matvec_<type> for n_tokens <= VKS_MATMUL_TOKEN_TILE and matmul_<type> above; kLanes:
  // matlanes_<type> for any count; kDot: quantize_q8_f32 then matdot_<type> (quantized formats).
  // Each family gives a token bit-identical results whatever the batch (they differ from each other
  // in summation order, and dot in x's rounding). One dispatch per part of W (kDot: one more, and
  // two barriers, see bind_q8_scratch).
  // x: [n_tokens][x_stride] (x_stride >= cols, x_stride % 4 == 0), y: [n_tokens][y_stride] (y_stride >= rows).
  void matmul(CommandBuffer& cmd, const DeviceMatrix& w, BufferView x, uint32_t x_stride, BufferView y,
              uint32_t y_stride, uint32_t n_tokens, bool accumulate = false) const;
  // Force matvec_ or matmul_ in the kRows family (tests and benchmarks); kLanes has one kernel.
  void matvec_only(CommandBuffer& cmd, const DeviceMatrix& w, BufferView x, uint32_t x_stride, BufferView y,
                   uint32_t y_stride, uint32_t n_tokens, bool accumulate = false) const;
  void matmul_only(CommandBuffer& cmd, const DeviceMatrix& w, BufferView x, uint32_t x_stride, BufferView y,
                   uint32_t y_stride, uint32_t n_tokens, bool accumulate = false) const;

  // SwiGLU as the epilogue of the gate|up product, saving swiglu's dispatch: w stacks hidden gate
  // rows then hidden up rows ([2 * hidden, cols] in one part: swiglu_epilogue_fits(w)), and
  // y[t][h] = silu(dot(gate_h, x[t])) * dot(up_h, x[t]) for h < hidden: the same bits as matmul
  // then swiglu. op: kMatvec or kMatmul as above (the kLanes family has one kernel for both).
  void matmul_swiglu(CommandBuffer& cmd, WeightOp op, const DeviceMatrix& w, BufferView x, uint32_t x_stride,
                     BufferView y, uint32_t y_stride, uint32_t n_tokens) const;
  static bool swiglu_epilogue_fits(const DeviceMatrix& w) {
    return w.rows >= 2 && w.rows % 2 == 0 && w.storage.part_count() == 1;
  }

  // Which rows each expert runs over in a mul_mat_id product: slot s of `table` is uint32 [4]
  // (expert, first row of x and y, rows, unused); a slot of 0 rows is empty.
  struct ExpertGroupTable {
    BufferView table;
    uint32_t max_groups = 0;      // slots the dispatch covers (grid z)
    uint32_t max_group_rows = 0;  // the most rows one group may have (grid y)
    uint32_t x_rows = 0;          // rows of x the groups cover (the dot family quantizes them all)
  };
  // llama.cpp's mul_mat_id: for each group (e, first, rows), y[first + t] = W_e x[first + t] for
  // t < rows, in one dispatch per part of W for every expert. W stacks the experts, expert_rows rows
  // each, parts holding whole experts; swiglu: each expert's block is gate|up (expert_rows / 2 of
  // each) and y gets silu(gate) * up. A group's outputs are the bits of matmul (matmul_swiglu) of
  // its expert alone over its rows alone. op: kMatvec or kMatmul as above (the same bits; kMatvec
  // sizes each token tile to its group's rows, and groups are mostly small: build_weight_kernels
  // builds only it for mul_mat_id). x_stride % 4 == 0.
  void matmul_id(CommandBuffer& cmd, WeightOp op, const DeviceMatrix& w, uint32_t expert_rows,
                 const ExpertGroupTable& groups, BufferView x, uint32_t x_stride, BufferView y, uint32_t y_stride,
                 bool swiglu_epilogue = false) const;

  // The lanes and dot families (fuses_rmsnorm()): y[t] = W rmsnorm(x[t]) with RMSNorm's weights
  // `norm` (f32 [cols] at the start of its buffer, padded to a multiple of 4 floats) and eps. Lanes:
  // each workgroup norms the x it reads anyway (see matlanes_main.glsl): no rmsnorm dispatch, the
  // same values up to rounding. Dot: quantize_q8_f32 norms x as rmsnorm_f32 does. Batch-invariant.
  // swiglu_epilogue: as matmul_swiglu as well. op as above.
  void matmul_rmsnorm(CommandBuffer& cmd, WeightOp op, const DeviceMatrix& w, BufferView x, uint32_t x_stride,
                      BufferView norm, float eps, BufferView y, uint32_t y_stride, uint32_t n_tokens,
                      bool swiglu_epilogue = false) const;
  // In the kRows family (CPU devices' default) the norm's weights would cost each row group as many
  // loads as x itself, so rmsnorm stays a dispatch of its own there.
  bool fuses_rmsnorm() const { return family_ != MatmulFamily::kRows; }
  // The rows family's kernel for a token count (kMatvec up to VKS_MATVEC_TOKEN_TILE).
  static WeightOp weight_op_for(uint32_t n_tokens);

  // Per-head RMSNorm (qwen3's attn_q_norm / attn_k_norm), in place: for r < n_rows, h < n_heads,
  // the head_dim floats at x[r * x_stride + h * head_dim] are normalized and scaled by
  // weight[0..head_dim). Same kernel and reduction order as rmsnorm.
  void rmsnorm_heads(CommandBuffer& cmd, BufferView x, uint32_t x_stride, BufferView weight, uint32_t n_rows,
                     uint32_t n_heads, uint32_t head_dim, float eps) const;

  // Per-head L2 norm (the Gated DeltaNet's q and k), in place: the head_dim floats at
  // x[r * x_stride + h * head_dim] become x / max(sqrt(sum x^2), eps) (ggml_l2_norm), l2norm_f32.
  void l2norm_heads(CommandBuffer& cmd, BufferView x, uint32_t x_stride, uint32_t n_rows, uint32_t n_heads,
                    uint32_t head_dim, float eps) const;
  // x[r][i] *= sigmoid(gate[r][i]) for r < n_rows, i < cols, or sigmoid(gate[r][0]) where
  // broadcast (one gate a row); rows x_stride and gate_stride floats apart (sigmoid_gate_f32).
  void sigmoid_gate(CommandBuffer& cmd, BufferView x, uint32_t x_stride, BufferView gate, uint32_t gate_stride,
                    uint32_t n_rows, uint32_t cols, bool broadcast) const;

  // x[r][i] += bias[i] for r < n_rows, i < cols (x rows x_stride floats apart): qwen2's Q/K/V biases.
  void bias_add(CommandBuffer& cmd, BufferView x, uint32_t x_stride, BufferView bias, uint32_t n_rows,
                uint32_t cols) const;

  // Builds, ahead of use (start-up), the pipelines this family's products with w take: matmul
  // (both false), matmul_swiglu (swiglu_epilogue), matmul_rmsnorm (rmsnorm_prologue, with or without
  // the epilogue), matmul_id with kMatvec (mul_mat_id). Nothing for a matrix with no rows.
  void build_weight_kernels(const DeviceMatrix& w, bool swiglu_epilogue, bool rmsnorm_prologue,
                            bool mul_mat_id = false) const;

  // x[r][i] += bias[ids[r] * bias_stride + i] for r < n_rows, i < cols (ids: int32 [n_rows]; a
  // negative id leaves its row alone): per-expert biases on rows grouped by expert, one dispatch.
  void bias_add_rows(CommandBuffer& cmd, BufferView x, uint32_t x_stride, BufferView bias, uint32_t bias_stride,
                     BufferView ids, uint32_t n_rows, uint32_t cols) const;

  // out[r][i] = silu(gate[r][i]) * up[r][i] for r < n_rows, i < cols; gate and up rows are
  // in_stride floats apart (e.g. gate‖up in one [n, 2*hidden] buffer: up = gate view + hidden*4
  // bytes, in_stride = 2*hidden). out may alias gate.
  void swiglu(CommandBuffer& cmd, BufferView gate, BufferView up, uint32_t in_stride, BufferView out,
              uint32_t out_stride, uint32_t n_rows, uint32_t cols) const;
  // The other gated activations, same conventions: gelu(gate) * up (tanh GELU, geglu_f32) and
  // gpt-oss's clamped SwiGLU (swiglu_oai_f32).
  void geglu(CommandBuffer& cmd, BufferView gate, BufferView up, uint32_t in_stride, BufferView out,
             uint32_t out_stride, uint32_t n_rows, uint32_t cols) const;
  void swiglu_oai(CommandBuffer& cmd, BufferView gate, BufferView up, uint32_t in_stride, BufferView out,
                  uint32_t out_stride, uint32_t n_rows, uint32_t cols) const;
  // In place over x [n_rows][stride]: x *= value (scale_f32); x = cap * tanh(x / cap) (softcap_f32).
  void scale(CommandBuffer& cmd, BufferView x, uint32_t stride, uint32_t n_rows, uint32_t cols, float value) const;
  void softcap(CommandBuffer& cmd, BufferView x, uint32_t stride, uint32_t n_rows, uint32_t cols, float cap) const;
  // out[r][i] = a[r][i] + b[r][i] (same stride convention; out may alias a).
  void add(CommandBuffer& cmd, BufferView a, BufferView b, uint32_t in_stride, BufferView out,
           uint32_t out_stride, uint32_t n_rows, uint32_t cols) const;

  // Generic f32 row gather (embed_f32 on a plain buffer): out[t] = table[ids[t]][0..cols) for
  // t < n; table rows are table_stride floats apart (table_stride % 4 == 0 is NOT required).
  // ids: int32 [n]; ids outside [0, table_rows) leave out[t] untouched.
  void gather_rows(CommandBuffer& cmd, BufferView table, uint32_t table_stride, uint32_t table_rows,
                   uint32_t cols, BufferView ids, uint32_t n, BufferView out, uint32_t out_stride) const;

  // out (int32 [n_rows]) = argmax of each row of x ([n_rows][x_stride], cols used).
  void argmax(CommandBuffer& cmd, BufferView x, uint32_t x_stride, uint32_t n_rows, uint32_t cols,
              BufferView out) const;
  // out_idx (int32 [n_rows][k]) and out_val (f32 [n_rows][k]): the k largest of each row, value
  // descending then index ascending. k <= VKS_TOPK_MAX (64) and k <= cols, and k rounds over cols
  // must fit lavapipe's loop budget (topk_loop_iterations; any vocabulary up to 259,328 at k = 64).
  void topk(CommandBuffer& cmd, BufferView x, uint32_t x_stride, uint32_t n_rows, uint32_t cols, uint32_t k,
            BufferView out_idx, BufferView out_val) const;

 private:
  // The pipeline of one weight op for this matrix's format, looked up by name once per format and
  // Ops (then by kernel slot); swiglu_epilogue / rmsnorm_prologue: its specializations for
  // matmul_swiglu / matmul_rmsnorm (the prologue exists in the kLanes kernels only).
  const Kernel& weight_kernel(const DeviceMatrix& w, WeightOp op, bool swiglu_epilogue = false,
                              bool rmsnorm_prologue = false, bool mul_mat_id = false) const;
  struct Fusion {
    bool swiglu = false;      // the SwiGLU epilogue (up rows from w.rows / 2)
    BufferView norm{};        // the RMSNorm prologue's weights (null buffer: none)
    float norm_eps = 0.0f;
  };
  // id: the mul_mat_id form (matmul_id), expert_rows rows an expert; null: the plain product.
  void matmul_with(CommandBuffer& cmd, WeightOp op, const DeviceMatrix& w, BufferView x, uint32_t x_stride,
                   BufferView y, uint32_t y_stride, uint32_t n_tokens, bool accumulate, const Fusion& fusion,
                   const ExpertGroupTable* id = nullptr, uint32_t expert_rows = 0) const;
  // The op a product of w runs in this family: kDot's quantized formats, else kLanes; the rows
  // family's `op` as asked.
  WeightOp family_op(const DeviceMatrix& w, WeightOp op) const;
  // The kDot family's first half of a product: x (normed where norm is given) into q8_scratch_,
  // between barriers (bind_q8_scratch).
  void quantize_q8(CommandBuffer& cmd, BufferView x, uint32_t x_stride, uint32_t cols, uint32_t n_tokens,
                   const Fusion& fusion) const;
  KernelRegistry* kernels_;
  MatmulFamily family_;
  uint32_t lanes_wide_tile_;
  BufferView q8_scratch_{};
  mutable const Kernel* quantize_q8_ = nullptr;  // quantize_q8_f32, looked up once
  // [(kernel_slot * kWeightOpCount + op) * 8 + id * 4 + norm * 2 + swiglu]
  mutable std::vector<const Kernel*> weight_kernels_;
};

// Loop iterations one topk_f32 invocation runs, exit tests counted: k rounds of ceil(cols /
// (VKS_TOPK_WG * VKS_TOPK_PER_STEP)) steps plus the scan's exit test, the reduction's levels and
// exit test and the round loop's own test, and the round loop's last test.
uint64_t topk_loop_iterations(uint32_t cols, uint32_t k);

}  // namespace vks::vk
