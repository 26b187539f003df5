#include "engine/vulkan/runner/attn_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>

#include "engine/common/error.h"

namespace vks::vk {

namespace {

// The one place a kernel family picks its attention kernel and how many heads a workgroup takes.
struct AttnKernelChoice {
  std::string_view name;
  uint32_t heads_per_group;
};
AttnKernelChoice attention_choice(MatmulFamily family) {
  if (lanes_layout(family)) return {"attn_lanes_f16", 1};  // a workgroup per (head, token)
  return {"attn_f16", VKS_ATTN_HEADS_PER_GROUP};           // an invocation per (head, token)
}

}  // namespace

void record_rope_kv(CommandBuffer& cmd, KernelRegistry& kernels, const RopeKvBindings& b, const gpu::RopeKvParams& p) {
  // With a quantized pool an invocation writes 4 K and V values (8 a block), else a pair (rope_kv_f16.comp).
  const bool blocks = p.k_type != VKS_KV_F16 || p.v_type != VKS_KV_F16;
  const uint64_t kv_units = uint64_t{p.n_kv_heads} * p.head_dim / (blocks ? 4 : 2);
  const uint64_t invocations = uint64_t{p.n_q_heads} * (p.rope_dim / 2) + kv_units;
  if (invocations == 0 || p.n_tokens == 0) return;
  if (blocks && p.n_kv_heads > 0 && p.head_dim % VKS_KV_BLOCK != 0) {
    throw Error(ErrorCode::kInvalidArgument, "rope_kv: a quantized pool needs head_dim a multiple of 32");
  }
  const uint32_t constants[2] = {p.k_type, p.v_type};  // constant_id 0 and 1 of rope_kv_f16.comp
  const Kernel& k = blocks ? kernels.get("rope_kv_f16", constants) : kernels.get("rope_kv_f16");
  cmd.dispatch(k, {b.rows, b.positions, b.freqs, b.k_pool, b.v_pool, b.slot_mapping}, p,
               Groups{static_cast<uint32_t>(ceil_div(invocations, VKS_ROPE_KV_WG)), p.n_tokens, 1});
}

void record_attention(CommandBuffer& cmd, KernelRegistry& kernels, const AttnBindings& b, gpu::AttnParams p,
                      MatmulFamily family, uint64_t longest_keys) {
  if (p.n_tokens == 0) return;
  const uint32_t head_groups = static_cast<uint32_t>(ceil_div(p.n_heads, attention_choice(family).heads_per_group));
  const Kernel& k = attention_kernel(kernels, p.head_dim, family, p.k_type, p.v_type);
  const BufferView sinks = p.has_sinks != 0 ? b.sinks : b.out;  // bound in any case, read with has_sinks
  if (!lanes_layout(family)) {
    p.split_count = 0;
    p.split_keys = 0;
    cmd.dispatch(k, {b.q, b.k_pool, b.v_pool, b.positions, b.token_seq, b.block_tables, b.out, sinks}, p,
                 Groups{head_groups, p.n_tokens, 1});
    return;
  }
  if (p.split_keys == 0 || p.split_keys % VKS_ATTN_LANES_WG != 0 || p.split_keys > VKS_ATTN_SPLIT_KEYS_MAX) {
    throw Error(ErrorCode::kInvalidArgument, "record_attention: " + std::to_string(p.split_keys) +
                                                 " keys per split (attention_split_keys_for gives them)");
  }
  // A view of unknown size (VK_WHOLE_SIZE) bounds nothing: no parallel splits then.
  const auto sized = [](const BufferView& v) {
    return v.buffer == VK_NULL_HANDLE || v.size == VK_WHOLE_SIZE ? uint64_t{0} : v.size;
  };
  const bool counts_fit = sized(b.split_counts) >= uint64_t{p.n_tokens} * p.n_heads * sizeof(uint32_t);
  p.split_count = counts_fit ? attention_parallel_splits(p, family, longest_keys, sized(b.partials)) : 0;
  // Bindings 7 and 9 are used only with split_count > 1; out stands in otherwise.
  const bool split = p.split_count > 1;
  cmd.dispatch(k,
               {b.q, b.k_pool, b.v_pool, b.positions, b.token_seq, b.block_tables, b.out, split ? b.partials : b.out,
                sinks, split ? b.split_counts : b.out},
               p, Groups{head_groups, p.n_tokens, std::max<uint32_t>(p.split_count, 1)});
}

uint32_t attention_parallel_splits(const gpu::AttnParams& p, MatmulFamily family, uint64_t longest_keys,
                                   uint64_t partials_bytes) {
  if (!lanes_layout(family) || p.n_tokens > kAttnParallelMaxTokens) return 0;
  // A window layer's tokens see at most its window.
  const uint64_t visible = p.window > 0 ? std::min<uint64_t>(longest_keys, p.window) : longest_keys;
  const uint64_t splits = attention_split_count(visible, p.split_keys);
  // Grid z holds the splits: past the workgroups a grid dimension is guaranteed (8.4M keys), the
  // workgroups walk them.
  if (splits <= 1 || splits > kGuaranteedGroupsPerDimension) return 0;
  const uint64_t need = uint64_t{p.n_tokens} * p.n_heads * splits * (p.head_dim + 2) * sizeof(float);
  return need <= partials_bytes ? static_cast<uint32_t>(splits) : 0;
}

uint64_t attention_partials_bytes(uint32_t n_heads, uint32_t head_dim, uint64_t max_keys, uint32_t split_keys) {
  return uint64_t{kAttnParallelMaxTokens} * n_heads * attention_split_count(max_keys, split_keys) * (head_dim + 2) *
         sizeof(float);
}

uint32_t attention_split_keys_for(const DeviceInfo&, std::string_view choice) {
  if (choice.empty()) return VKS_ATTN_SPLIT_KEYS;
  uint32_t keys = 0;
  const auto [end, error] = std::from_chars(choice.data(), choice.data() + choice.size(), keys);
  if (error != std::errc() || end != choice.data() + choice.size() || keys == 0 || keys % VKS_ATTN_LANES_WG != 0 ||
      keys > VKS_ATTN_SPLIT_KEYS_MAX) {
    throw Error(ErrorCode::kInvalidArgument, "attention split keys must be a multiple of " +
                                                 std::to_string(VKS_ATTN_LANES_WG) + " up to " +
                                                 std::to_string(VKS_ATTN_SPLIT_KEYS_MAX) + ", not '" +
                                                 std::string(choice) + "'");
  }
  return keys;
}

uint64_t attention_split_counts_bytes(uint32_t n_heads) {
  return uint64_t{kAttnParallelMaxTokens} * n_heads * sizeof(uint32_t);
}

AttnSpecialization attention_specialization(uint32_t head_dim) {
  const uint32_t half = head_dim / 2;
  uint32_t step = 4;  // see AttnSpecialization::dim_step
  while (step > 1 && half % step != 0) step /= 2;
  return AttnSpecialization{half, step};
}

namespace {

// An attention pipeline specialized by head size (constant_id 0 and 1 of every attention shader), so
// that its loops fit lavapipe's loop budget (attn_f16.comp).
const Kernel& specialized_for_head(KernelRegistry& kernels, std::string_view name, uint32_t head_dim) {
  const AttnSpecialization spec = attention_specialization(head_dim);
  const uint32_t constants[2] = {spec.half_head_dim, spec.dim_step};
  return kernels.get(name, constants);
}

}  // namespace

const Kernel& attention_kernel(KernelRegistry& kernels, uint32_t head_dim, MatmulFamily family, uint32_t k_type,
                               uint32_t v_type) {
  if (k_type == VKS_KV_F16 && v_type == VKS_KV_F16) {
    return specialized_for_head(kernels, attention_choice(family).name, head_dim);
  }
  if (head_dim % VKS_KV_BLOCK != 0) {
    throw Error(ErrorCode::kInvalidArgument, "attention: a quantized pool needs head_dim a multiple of 32");
  }
  // constant_id 2 and 3: the pools' types (a quantized pool's head size is a multiple of 32, so
  // dim_step is 4).
  const AttnSpecialization spec = attention_specialization(head_dim);
  const uint32_t constants[4] = {spec.half_head_dim, spec.dim_step, k_type, v_type};
  return kernels.get(attention_choice(family).name, constants);
}

namespace {

// attn_lanes_f16 walking every split itself (the longest path: a split in parallel runs one), walked
// as one invocation runs it, every loop's exit test counted, the loops NIR may
// unroll counted as if they ran (but the values' loop over the tile's 64 keys, marked [[unroll]]
// with constant bounds: counted, it would leave a third of the range; the measured edges below
// show Mesa 22.3 unrolls it, and the attention test at this count's edge fails if a driver did
// not), and 8 more per tile. Measured on lavapipe (Mesa 22.3, bisecting the key count): keys were
// lost past 279,579 at head_dim 64 (15 counted per tile: NIR unrolls the score loop there) and past
// 87,352 at head_dim 256 (48 per tile: the score loop stays), before the kernel walked splits (a
// split adds the merge and its own loops, so the edges now lie a little lower); the attention test
// runs the count's last key on the device.
uint64_t lanes_attention_max_keys(const AttnSpecialization& spec, uint32_t split_keys) {
  const uint64_t wg = VKS_ATTN_LANES_WG;
  const uint64_t owned_max = VKS_ATTN_MAX_HEAD_DIM / 2 / wg;       // the unrolled loop over output pairs
  const uint64_t owned = (spec.half_head_dim + wg - 1) / wg;       // pairs an invocation loads q for
  uint64_t tree = 0;                                               // one reduction tree's loop
  for (uint64_t step = wg / 2; step > 0; step >>= 1) ++tree;
  const uint64_t per_tile = 1                                      // the tile loop
                            + spec.half_head_dim / spec.dim_step + 1  // scores
                            + 2 * (tree + 1)                       // max and sum trees
                            + (owned_max + 1)                      // values (keys unrolled)
                            + 8;                                   // what the measured edges showed beyond
  const uint64_t per_split = 1                                     // the split loop
                             + split_keys / wg * per_tile
                             + 1                                   // the tile loop's exit test
                             + 2 * (owned_max + 1);                // clearing the pairs, merging the split
  const uint64_t fixed = (owned + 1) + 2 * (owned_max + 1) + 1;    // q, empty state and output loops, split-loop exit
  return (uint64_t{VKS_LAVAPIPE_LOOP_BUDGET} - fixed) / per_split * split_keys;
}

}  // namespace

uint64_t attention_max_keys(uint32_t head_dim, MatmulFamily family, uint32_t split_keys) {
  const AttnSpecialization spec = attention_specialization(head_dim);
  if (lanes_layout(family)) return lanes_attention_max_keys(spec, split_keys);
  // lavapipe counts a loop's exit test as an iteration too (measured: at head_dim 64 the kernel
  // reaches 3,449 chunks and not 3,450, i.e. 19 counted iterations per chunk, not 17).
  const uint64_t dim_loop = spec.half_head_dim / spec.dim_step + 1;
  const uint64_t per_chunk = 2 * dim_loop + 1;  // scores, values, the chunk loop itself
  const uint64_t fixed = 2 * dim_loop + 1;      // loading q, writing the output, the chunk loop's exit
  return (uint64_t{VKS_LAVAPIPE_LOOP_BUDGET} - fixed) / per_chunk * VKS_ATTN_CHUNK;
}

void check_attention_shape(uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, uint32_t rope_dim) {
  if (n_heads == 0 || n_kv_heads == 0 || n_heads % n_kv_heads != 0) {
    throw Error(ErrorCode::kUnsupported,
                fmt::format("attention: {} heads is not a multiple of {} kv heads", n_heads, n_kv_heads));
  }
  if (head_dim == 0 || head_dim % 2 != 0 || head_dim > VKS_ATTN_MAX_HEAD_DIM) {
    throw Error(ErrorCode::kUnsupported,
                fmt::format("attention: head_dim {} unsupported (even, at most {})", head_dim, VKS_ATTN_MAX_HEAD_DIM));
  }
  if (rope_dim % 2 != 0 || rope_dim > head_dim) {
    throw Error(ErrorCode::kUnsupported,
                fmt::format("rope: rope_dim {} unsupported (even, at most head_dim {})", rope_dim, head_dim));
  }
}

}  // namespace vks::vk
