#include "engine/vulkan/kernels/ops.h"

#include <bit>
#include <span>
#include <string>

#include "engine/common/error.h"
#include "engine/vulkan/shaders/shader_params.h"

namespace vks::vk {
namespace {

using shader::ElementwiseParams;
using shader::ScalarMapParams;
using shader::EmbedParams;
using shader::MatmulParams;
using shader::QuantizeQ8Params;
using shader::ReduceRowParams;
using shader::RmsNormParams;
using shader::SigmoidGateParams;

uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorCode::kInvalidArgument, what);
}

}  // namespace

std::string_view matmul_family_name(MatmulFamily family) {
  switch (family) {
    case MatmulFamily::kLanes: return "lanes";
    case MatmulFamily::kDot: return "dot";
    case MatmulFamily::kRows: break;
  }
  return "rows";
}

MatmulFamily choose_matmul_family(const DeviceInfo& device, std::string_view choice) {
  if (choice == "rows") return MatmulFamily::kRows;
  if (choice == "lanes") return MatmulFamily::kLanes;
  if (choice == "dot") {
    if (!device.integer_dot) {
      throw Error(ErrorCode::kUnsupported, "the dot matmul kernels need VK_KHR_shader_integer_dot_product, which " +
                                               device.name + " lacks (use auto, rows or lanes)");
    }
    return MatmulFamily::kDot;
  }
  if (!choice.empty() && choice != "auto") {
    throw Error(ErrorCode::kInvalidArgument,
                "matmul kernels must be auto, rows, lanes or dot, not '" + std::string(choice) + "'");
  }
  return device.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? MatmulFamily::kRows : MatmulFamily::kLanes;
}

uint32_t q8_row_words(uint64_t cols) { return u32(cols / 32 * VKS_Q8_BLOCK_WORDS); }

uint32_t lanes_wide_tile_for(const DeviceInfo& device, std::string_view choice) {
  if (choice == "8") return 8;
  if (choice == "16") return 16;
  if (choice == "32") return 32;
  if (!choice.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "the lanes token tile must be 8, 16 or 32, not '" + std::string(choice) + "'");
  }
  // 16, not 32, on GPUs until a GPU run measures them (bench/real_gpu/run.sh prefill): at 32 a lane
  // keeps 128 sums in registers, near NVIDIA's 255 a thread.
  return device.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 8 : 16;
}

Ops::Ops(KernelRegistry& kernels, MatmulFamily family, uint32_t lanes_wide_tile)
    : kernels_(&kernels),
      family_(family),
      lanes_wide_tile_(lanes_wide_tile),
      weight_kernels_(size_t{device_kernel_slot_count()} * kWeightOpCount * 8, nullptr) {
  require(lanes_wide_tile == 8 || lanes_wide_tile == 16 || lanes_wide_tile == VKS_LANES_WIDE_TILES_MAX,
          "Ops: the lanes token tile must be 8, 16 or 32");
}

const Kernel& Ops::weight_kernel(const DeviceMatrix& w, WeightOp op, bool swiglu_epilogue, bool rmsnorm_prologue,
                                 bool mul_mat_id) const {
  if (w.format == nullptr) throw Error(ErrorCode::kInvalidArgument, "weight op on a matrix that was never uploaded");
  require(!rmsnorm_prologue || op == WeightOp::kLanes, "the RMSNorm prologue exists in the lanes kernels only");
  require(op != WeightOp::kDot || w.format->blocked(), "the dot kernels take quantized formats only");
  const size_t index = (size_t{w.format->kernel_slot} * kWeightOpCount + static_cast<uint32_t>(op)) * 8 +
                       (mul_mat_id ? 4 : 0) + (rmsnorm_prologue ? 2 : 0) + (swiglu_epilogue ? 1 : 0);
  const Kernel*& slot = weight_kernels_[index];
  if (slot == nullptr) {
    // constant_id 0, 1 and 3 of common_matmul.glsl, 2 of matlanes_main.glsl (the lanes kernels only;
    // an entry for a constant a shader lacks is ignored).
    const uint32_t constants[] = {swiglu_epilogue ? 1u : 0u, rmsnorm_prologue ? 1u : 0u, lanes_wide_tile_,
                                  mul_mat_id ? 1u : 0u};
    const bool wide = (op == WeightOp::kLanes || op == WeightOp::kDot) && lanes_wide_tile_ != VKS_LANES_TOKEN_TILE;
    const std::span<const uint32_t> used(constants, mul_mat_id ? 4 : wide ? 3 : 2);
    slot = swiglu_epilogue || rmsnorm_prologue || wide || mul_mat_id ? &kernels_->get(w.format->kernel_name(op), used)
                                                                     : &kernels_->get(w.format->kernel_name(op));
  }
  return *slot;
}

void Ops::embed(CommandBuffer& cmd, const DeviceMatrix& table, BufferView tokens, uint32_t n_tokens, BufferView out,
                uint32_t out_stride) const {
  if (n_tokens == 0) return;
  require(out_stride >= table.cols, "embed: out_stride < cols");
  const Kernel& k = weight_kernel(table, WeightOp::kEmbed);
  // F32 tables: one invocation per element; every other format: one per chunk of 8 elements
  // (the decode unit of shaders/weight_blocks.glsl).
  const uint64_t per_row = table.format->source == GgmlType::kF32 || table.format->source == GgmlType::kBF16
                               ? table.cols
                               : ceil_div(table.cols, 8);
  for (size_t part = 0; part < table.storage.part_count(); ++part) {
    const EmbedParams p{n_tokens,
                        u32(table.cols),
                        u32(table.storage.first_row(part)),
                        u32(table.storage.part_rows(part)),
                        table.row_stride,
                        table.d_offset[part],
                        out_stride,
                        0};
    cmd.dispatch(k, {table.storage.parts[part].view(), tokens, out}, p,
                 Groups{u32(ceil_div(per_row, k.layout().local_size[0])), n_tokens, 1});
  }
}

void Ops::gather_rows(CommandBuffer& cmd, BufferView table, uint32_t table_stride, uint32_t table_rows, uint32_t cols,
                      BufferView ids, uint32_t n, BufferView out, uint32_t out_stride) const {
  if (n == 0) return;
  require(table_stride >= cols && out_stride >= cols, "gather_rows: stride < cols");
  const Kernel& k = kernels_->get("embed_f32");
  const EmbedParams p{n, cols, 0, table_rows, table_stride, 0, out_stride, 0};
  cmd.dispatch(k, {table, ids, out}, p, Groups{u32(ceil_div(cols, k.layout().local_size[0])), n, 1});
}

void Ops::rmsnorm(CommandBuffer& cmd, BufferView x, uint32_t x_stride, BufferView weight, BufferView out,
                  uint32_t out_stride, uint32_t n_rows, uint32_t dim, float eps) const {
  if (n_rows == 0) return;
  require(x_stride >= dim && out_stride >= dim, "rmsnorm: stride < dim");
  const Kernel& k = kernels_->get("rmsnorm_f32");
  const RmsNormParams p{n_rows, dim, x_stride, out_stride, eps, 0, 0, 0};
  cmd.dispatch(k, {x, weight, out}, p, Groups{1, n_rows, 1});
}

void Ops::rmsnorm_heads(CommandBuffer& cmd, BufferView x, uint32_t x_stride, BufferView weight, uint32_t n_rows,
                        uint32_t n_heads, uint32_t head_dim, float eps) const {
  if (n_rows == 0 || n_heads == 0) return;
  require(head_dim > 0 && x_stride >= uint64_t{n_heads} * head_dim, "rmsnorm_heads: stride < n_heads * head_dim");
  const Kernel& k = kernels_->get("rmsnorm_f32");
  const RmsNormParams p{n_rows, head_dim, x_stride, x_stride, eps, head_dim, 0, 0};
  cmd.dispatch(k, {x, weight, x}, p, Groups{n_heads, n_rows, 1});
}

void Ops::l2norm_heads(CommandBuffer& cmd, BufferView x, uint32_t x_stride, uint32_t n_rows, uint32_t n_heads,
                       uint32_t head_dim, float eps) const {
  if (n_rows == 0 || n_heads == 0) return;
  require(head_dim > 0 && x_stride >= uint64_t{n_heads} * head_dim, "l2norm_heads: stride < n_heads * head_dim");
  const Kernel& k = kernels_->get("l2norm_f32");
  const RmsNormParams p{n_rows, head_dim, x_stride, x_stride, eps, head_dim, 0, 0};
  cmd.dispatch(k, {x, x}, p, Groups{n_heads, n_rows, 1});
}

void Ops::sigmoid_gate(CommandBuffer& cmd, BufferView x, uint32_t x_stride, BufferView gate, uint32_t gate_stride,
                       uint32_t n_rows, uint32_t cols, bool broadcast) const {
  if (n_rows == 0 || cols == 0) return;
  require(x_stride >= cols && (broadcast || gate_stride >= cols), "sigmoid_gate: stride < cols");
  const Kernel& k = kernels_->get("sigmoid_gate_f32");
  const SigmoidGateParams p{n_rows, cols, x_stride, gate_stride, broadcast ? 1u : 0u};
  cmd.dispatch(k, {x, gate}, p, Groups{u32(ceil_div(cols, k.layout().local_size[0])), n_rows, 1});
}

void Ops::bias_add(CommandBuffer& cmd, BufferView x, uint32_t x_stride, BufferView bias, uint32_t n_rows,
                   uint32_t cols) const {
  if (n_rows == 0 || cols == 0) return;
  require(x_stride >= cols, "bias_add: stride < cols");
  const Kernel& k = kernels_->get("bias_add_f32");
  const ElementwiseParams p{n_rows, cols, x_stride, x_stride};
  cmd.dispatch(k, {x, bias}, p, Groups{u32(ceil_div(cols, k.layout().local_size[0])), n_rows, 1});
}

void Ops::bias_add_rows(CommandBuffer& cmd, BufferView x, uint32_t x_stride, BufferView bias, uint32_t bias_stride,
                        BufferView ids, uint32_t n_rows, uint32_t cols) const {
  if (n_rows == 0 || cols == 0) return;
  require(x_stride >= cols && bias_stride >= cols, "bias_add_rows: stride < cols");
  const Kernel& k = kernels_->get("bias_add_rows_f32");
  const ElementwiseParams p{n_rows, cols, x_stride, bias_stride};
  cmd.dispatch(k, {x, bias, ids}, p, Groups{u32(ceil_div(cols, k.layout().local_size[0])), n_rows, 1});
}

void Ops::build_weight_kernels(const DeviceMatrix& w, bool swiglu_epilogue, bool rmsnorm_prologue,
                               bool mul_mat_id) const {
  if (w.rows == 0) return;
  if (family_ != MatmulFamily::kRows) {
    const WeightOp op = family_op(w, WeightOp::kLanes);
    if (op == WeightOp::kDot) quantize_q8_ = &kernels_->get("quantize_q8_f32");
    weight_kernel(w, op, swiglu_epilogue, rmsnorm_prologue && op == WeightOp::kLanes, mul_mat_id);
    return;
  }
  weight_kernel(w, WeightOp::kMatvec, swiglu_epilogue, rmsnorm_prologue, mul_mat_id);
  // mul_mat_id products take the matvec kernel whatever their rows (see matmul_id).
  if (!mul_mat_id) weight_kernel(w, WeightOp::kMatmul, swiglu_epilogue, rmsnorm_prologue, mul_mat_id);
}

WeightOp Ops::weight_op_for(uint32_t n_tokens) {
  return n_tokens <= VKS_MATVEC_TOKEN_TILE ? WeightOp::kMatvec : WeightOp::kMatmul;
}

void Ops::matmul(CommandBuffer& cmd, const DeviceMatrix& w, BufferView x, uint32_t x_stride, BufferView y,
                 uint32_t y_stride, uint32_t n_tokens, bool accumulate) const {
  matmul_with(cmd, weight_op_for(n_tokens), w, x, x_stride, y, y_stride, n_tokens, accumulate, Fusion{});
}

void Ops::matmul_swiglu(CommandBuffer& cmd, WeightOp op, const DeviceMatrix& w, BufferView x, uint32_t x_stride,
                        BufferView y, uint32_t y_stride, uint32_t n_tokens) const {
  matmul_with(cmd, op, w, x, x_stride, y, y_stride, n_tokens, false, Fusion{true, {}, 0.0f});
}

void Ops::matmul_rmsnorm(CommandBuffer& cmd, WeightOp op, const DeviceMatrix& w, BufferView x, uint32_t x_stride,
                         BufferView norm, float eps, BufferView y, uint32_t y_stride, uint32_t n_tokens,
                         bool swiglu_epilogue) const {
  require(fuses_rmsnorm(), "matmul_rmsnorm: the rows family has no RMSNorm prologue");
  require(norm.buffer != VK_NULL_HANDLE && norm.offset == 0, "matmul_rmsnorm: the norm weights start their buffer");
  // Read through the buffer's texel view, which covers whole 16-byte texels only.
  require(norm.size == VK_WHOLE_SIZE || norm.size >= (w.cols + 3) / 4 * 16,
          "matmul_rmsnorm: the norm weights' buffer must hold a whole texel past the last column (pad to 4 floats)");
  matmul_with(cmd, op, w, x, x_stride, y, y_stride, n_tokens, false,
              Fusion{swiglu_epilogue, norm, eps});
}

void Ops::matvec_only(CommandBuffer& cmd, const DeviceMatrix& w, BufferView x, uint32_t x_stride, BufferView y,
                      uint32_t y_stride, uint32_t n_tokens, bool accumulate) const {
  matmul_with(cmd, WeightOp::kMatvec, w, x, x_stride, y, y_stride, n_tokens, accumulate, Fusion{});
}

void Ops::matmul_only(CommandBuffer& cmd, const DeviceMatrix& w, BufferView x, uint32_t x_stride, BufferView y,
                      uint32_t y_stride, uint32_t n_tokens, bool accumulate) const {
  matmul_with(cmd, WeightOp::kMatmul, w, x, x_stride, y, y_stride, n_tokens, accumulate, Fusion{});
}

void Ops::matmul_id(CommandBuffer& cmd, WeightOp op, const DeviceMatrix& w, uint32_t expert_rows,
                    const ExpertGroupTable& groups, BufferView x, uint32_t x_stride, BufferView y, uint32_t y_stride,
                    bool swiglu_epilogue) const {
  if (groups.max_groups == 0 || groups.max_group_rows == 0) return;
  require(expert_rows > 0 && w.rows % expert_rows == 0, "matmul_id: the stack's rows are not whole experts");
  for (size_t part = 0; part < w.storage.part_count(); ++part) {
    require(w.storage.part_rows(part) % expert_rows == 0 && w.storage.first_row(part) % expert_rows == 0,
            "matmul_id: a part of the stack splits an expert");
  }
  require(!swiglu_epilogue || expert_rows % 2 == 0, "matmul_id: the SwiGLU epilogue needs gate|up blocks");
  require(groups.max_groups <= kGuaranteedGroupsPerDimension, "matmul_id: more group slots than one grid dimension");
  matmul_with(cmd, op, w, x, x_stride, y, y_stride, groups.max_group_rows, false, Fusion{swiglu_epilogue, {}, 0.0f},
              &groups, expert_rows);
}

void Ops::matmul_with(CommandBuffer& cmd, WeightOp op, const DeviceMatrix& w, BufferView x, uint32_t x_stride,
                      BufferView y, uint32_t y_stride, uint32_t n_tokens, bool accumulate,
                      const Fusion& fusion, const ExpertGroupTable* id, uint32_t expert_rows) const {
  if (n_tokens == 0) return;
  require(op != WeightOp::kEmbed, "matmul: kEmbed is not a product");
  const bool norm = fusion.norm.buffer != VK_NULL_HANDLE;
  require(x_stride >= w.cols, "matmul: x_stride < cols");
  // The kernels read x as vec4s (see common_matmul.glsl).
  require(x_stride % 4 == 0 && x.offset % 16 == 0, "matmul: x_stride must be a multiple of 4 and x 16-byte aligned");
  // The SwiGLU epilogue writes one output per gate|up pair, from the pair's two rows in one workgroup.
  require(!fusion.swiglu || id != nullptr || (swiglu_epilogue_fits(w) && !accumulate),
          "matmul: the SwiGLU epilogue needs a gate|up matrix of an even row count in one part, and no accumulate");
  // A mul_mat_id product's rows are one expert's (its block of the stack).
  const uint64_t block_rows = id != nullptr ? expert_rows : w.rows;
  const uint32_t up_rows_at = fusion.swiglu ? u32(block_rows / 2) : 0u;
  const uint64_t outputs = fusion.swiglu ? up_rows_at : block_rows;
  require(y_stride >= outputs, "matmul: y_stride < rows");
  op = family_op(w, op);
  if (op == WeightOp::kDot) {
    // x becomes its Q8 rows (normed there, not in the product): a mul_mat_id product's every row.
    require(id == nullptr || id->x_rows > 0, "matmul_id: the dot kernels need the rows of x (ExpertGroupTable::x_rows)");
    quantize_q8(cmd, x, x_stride, u32(w.cols), id != nullptr ? id->x_rows : n_tokens, fusion);
    x = q8_scratch_;
    x_stride = q8_row_words(w.cols);
  }
  const bool prologue = norm && op == WeightOp::kLanes;
  const Kernel& k = weight_kernel(w, op, fusion.swiglu, prologue, id != nullptr);
  struct Tiling {
    uint32_t rows_per_group, token_tile;
  };
  const uint32_t token_tile = op == WeightOp::kMatvec ? VKS_MATVEC_TOKEN_TILE : VKS_MATMUL_TOKEN_TILE;
  // A mul_mat_id grid is sized for its largest group at the smallest tile (a lanes group of more
  // than 8 rows takes the wide tile, and its workgroups past its rows exit).
  const uint32_t lanes_tile = id != nullptr ? VKS_LANES_TOKEN_TILE : VKS_LANES_TILE_FOR(n_tokens, lanes_wide_tile_);
  const bool lanes_grid = op == WeightOp::kLanes || op == WeightOp::kDot;
  const Tiling tiling = lanes_grid ? Tiling{VKS_LANES_ROWS, lanes_tile} : Tiling{w.format->rows_per_group(), token_tile};
  const uint32_t outputs_per_group = fusion.swiglu ? tiling.rows_per_group / 2 : tiling.rows_per_group;
  for (size_t part = 0; part < w.storage.part_count(); ++part) {
    const uint64_t rows = id != nullptr ? outputs : fusion.swiglu ? up_rows_at : w.storage.part_rows(part);
    const uint64_t first_row = w.storage.first_row(part);
    const MatmulParams p{u32(rows),
                         u32(w.cols),
                         n_tokens,
                         w.row_stride,
                         w.d_offset[part],
                         x_stride,
                         y_stride,
                         id != nullptr ? 0u : u32(first_row),
                         accumulate ? 1u : 0u,
                         x.texel_offset(),
                         up_rows_at,
                         prologue ? fusion.norm_eps : 0.0f,
                         id != nullptr ? expert_rows : 0u,
                         id != nullptr ? u32(first_row / expert_rows) : 0u,
                         id != nullptr ? u32((first_row + w.storage.part_rows(part)) / expert_rows) : 0u,
                         0u};
    // Row groups past the guaranteed 65,535 per grid dimension go to grid z (the lanes family's 4
    // rows per group reach it at 262,141 rows; its shader numbers groups across x and z); a
    // mul_mat_id dispatch has its group slots there instead.
    const uint64_t row_groups = ceil_div(rows, outputs_per_group);
    const uint64_t z = id != nullptr ? 1 : ceil_div(row_groups, kGuaranteedGroupsPerDimension);
    require(row_groups <= kGuaranteedGroupsPerDimension * z, "matmul_id: an expert of more rows than one grid dimension");
    const Groups groups{u32(ceil_div(row_groups, z)), u32(ceil_div(n_tokens, tiling.token_tile)),
                        id != nullptr ? id->max_groups : u32(z)};
    // Binding 3: mul_mat_id's group slots, or y standing in (never read); the lanes kernels'
    // binding 4: the norm weights, or x standing in (never read).
    const BufferView slots = id != nullptr ? id->table : y;
    if (lanes_grid) {
      cmd.dispatch(k, {w.storage.parts[part].view(), x, y, slots, prologue ? fusion.norm : x}, p, groups);
    } else {
      cmd.dispatch(k, {w.storage.parts[part].view(), x, y, slots}, p, groups);
    }
  }
}

WeightOp Ops::family_op(const DeviceMatrix& w, WeightOp op) const {
  if (family_ == MatmulFamily::kRows) return op;
  return family_ == MatmulFamily::kDot && w.format->blocked() ? WeightOp::kDot : WeightOp::kLanes;
}

void Ops::quantize_q8(CommandBuffer& cmd, BufferView x, uint32_t x_stride, uint32_t cols, uint32_t n_tokens,
                      const Fusion& fusion) const {
  require(q8_scratch_.buffer != VK_NULL_HANDLE, "the dot kernels need their Q8 scratch (Ops::bind_q8_scratch)");
  require(q8_scratch_.size == VK_WHOLE_SIZE || q8_scratch_.size >= uint64_t{n_tokens} * q8_row_words(cols) * 4,
          "the dot kernels' Q8 scratch is too small for this product");
  const bool norm = fusion.norm.buffer != VK_NULL_HANDLE;
  const QuantizeQ8Params p{n_tokens, cols, x_stride, q8_row_words(cols), fusion.norm_eps, norm ? 1u : 0u, 0, 0};
  cmd.barrier(Stage::kCompute, Stage::kCompute);  // a previous product may still read the scratch
  if (quantize_q8_ == nullptr) quantize_q8_ = &kernels_->get("quantize_q8_f32");  // no name lookup a product
  cmd.dispatch(*quantize_q8_, {x, norm ? fusion.norm : x, q8_scratch_}, p, Groups{1, n_tokens, 1});
  cmd.barrier(Stage::kCompute, Stage::kCompute);
}

void Ops::swiglu(CommandBuffer& cmd, BufferView gate, BufferView up, uint32_t in_stride, BufferView out,
                 uint32_t out_stride, uint32_t n_rows, uint32_t cols) const {
  if (n_rows == 0 || cols == 0) return;
  require(in_stride >= cols && out_stride >= cols, "swiglu: stride < cols");
  const Kernel& k = kernels_->get("swiglu_f32");
  const ElementwiseParams p{n_rows, cols, in_stride, out_stride};
  cmd.dispatch(k, {gate, up, out}, p, Groups{u32(ceil_div(cols, k.layout().local_size[0])), n_rows, 1});
}

namespace {

void gated(KernelRegistry& kernels, CommandBuffer& cmd, const char* kernel, BufferView gate, BufferView up,
           uint32_t in_stride, BufferView out, uint32_t out_stride, uint32_t n_rows, uint32_t cols) {
  if (n_rows == 0 || cols == 0) return;
  if (in_stride < cols || out_stride < cols) throw Error(ErrorCode::kInvalidArgument, std::string(kernel) + ": stride < cols");
  const Kernel& k = kernels.get(kernel);
  const ElementwiseParams p{n_rows, cols, in_stride, out_stride};
  cmd.dispatch(k, {gate, up, out}, p, Groups{static_cast<uint32_t>(ceil_div(cols, k.layout().local_size[0])), n_rows, 1});
}

void scalar_map(KernelRegistry& kernels, CommandBuffer& cmd, const char* kernel, BufferView x, uint32_t stride,
                uint32_t n_rows, uint32_t cols, float value) {
  if (n_rows == 0 || cols == 0) return;
  if (stride < cols) throw Error(ErrorCode::kInvalidArgument, std::string(kernel) + ": stride < cols");
  const Kernel& k = kernels.get(kernel);
  const ScalarMapParams p{n_rows, cols, stride, value};
  cmd.dispatch(k, {x}, p, Groups{static_cast<uint32_t>(ceil_div(cols, k.layout().local_size[0])), n_rows, 1});
}

}  // namespace

void Ops::geglu(CommandBuffer& cmd, BufferView gate, BufferView up, uint32_t in_stride, BufferView out,
                uint32_t out_stride, uint32_t n_rows, uint32_t cols) const {
  gated(*kernels_, cmd, "geglu_f32", gate, up, in_stride, out, out_stride, n_rows, cols);
}

void Ops::swiglu_oai(CommandBuffer& cmd, BufferView gate, BufferView up, uint32_t in_stride, BufferView out,
                     uint32_t out_stride, uint32_t n_rows, uint32_t cols) const {
  gated(*kernels_, cmd, "swiglu_oai_f32", gate, up, in_stride, out, out_stride, n_rows, cols);
}

void Ops::scale(CommandBuffer& cmd, BufferView x, uint32_t stride, uint32_t n_rows, uint32_t cols, float value) const {
  scalar_map(*kernels_, cmd, "scale_f32", x, stride, n_rows, cols, value);
}

void Ops::softcap(CommandBuffer& cmd, BufferView x, uint32_t stride, uint32_t n_rows, uint32_t cols, float cap) const {
  scalar_map(*kernels_, cmd, "softcap_f32", x, stride, n_rows, cols, cap);
}

void Ops::add(CommandBuffer& cmd, BufferView a, BufferView b, uint32_t in_stride, BufferView out, uint32_t out_stride,
              uint32_t n_rows, uint32_t cols) const {
  if (n_rows == 0 || cols == 0) return;
  require(in_stride >= cols && out_stride >= cols, "add: stride < cols");
  const Kernel& k = kernels_->get("add_f32");
  const ElementwiseParams p{n_rows, cols, in_stride, out_stride};
  cmd.dispatch(k, {a, b, out}, p, Groups{u32(ceil_div(cols, k.layout().local_size[0])), n_rows, 1});
}

void Ops::argmax(CommandBuffer& cmd, BufferView x, uint32_t x_stride, uint32_t n_rows, uint32_t cols,
                 BufferView out) const {
  if (n_rows == 0) return;
  require(cols > 0 && x_stride >= cols, "argmax: bad cols/stride");
  const Kernel& k = kernels_->get("argmax_f32");
  const ReduceRowParams p{n_rows, cols, x_stride, 1};
  cmd.dispatch(k, {x, out}, p, Groups{n_rows, 1, 1});
}

void Ops::topk(CommandBuffer& cmd, BufferView x, uint32_t x_stride, uint32_t n_rows, uint32_t cols, uint32_t k,
               BufferView out_idx, BufferView out_val) const {
  if (n_rows == 0) return;
  require(cols > 0 && x_stride >= cols, "topk: bad cols/stride");
  require(k >= 1 && k <= VKS_TOPK_MAX && k <= cols, "topk: k must be in [1, min(64, cols)]");
  require(topk_loop_iterations(cols, k) <= VKS_LAVAPIPE_LOOP_BUDGET,
          "topk: k rounds over this many columns exceed the device loop budget; lower k");
  const Kernel& kernel = kernels_->get("topk_f32");
  const ReduceRowParams p{n_rows, cols, x_stride, k};
  cmd.dispatch(kernel, {x, out_idx, out_val}, p, Groups{n_rows, 1, 1});
}

uint64_t topk_loop_iterations(uint32_t cols, uint32_t k) {
  const uint64_t per_iteration = uint64_t{VKS_TOPK_WG} * VKS_TOPK_PER_STEP;
  const uint64_t steps = (uint64_t{cols} + per_iteration - 1) / per_iteration;
  // lavapipe keeps the shared-memory reduction a loop despite [[unroll]] (it holds barriers):
  // log2(VKS_TOPK_WG) levels and its exit test count too. Measured: 64 rounds over 261,000 columns
  // (1,020 steps) stopped at the last round, as 64 * (1,020 + 10) + 1 = 65,921 predicts.
  const uint64_t reduction = static_cast<uint64_t>(std::bit_width(uint32_t{VKS_TOPK_WG}) - 1) + 1;
  return uint64_t{k} * (steps + 1 + reduction + 1) + 1;
}

}  // namespace vks::vk
