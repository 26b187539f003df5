#include "engine/vulkan/runner/vulkan_runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>

#include "engine/common/error.h"
#include "engine/model/kv_pools.h"
#include "engine/vulkan/runner/attn_kernels.h"
#include "engine/vulkan/runner/expert_kernels.h"
#include "engine/vulkan/runner/expert_plan.h"
#include "engine/vulkan/runner/invariance_check.h"
#include "engine/vulkan/shaders/deltanet_params.h"
#include "engine/vulkan/shaders/shader_params.h"

namespace vks {
namespace {

// The weight types of the matrices a step multiplies in plain products (not mul_mat_id's experts).
std::set<GgmlType> product_types(const vk::DeviceWeights& w) {
  std::set<GgmlType> types;
  auto add = [&](const vk::DeviceMatrix& m) {
    if (m.rows > 0 && m.format != nullptr) types.insert(m.format->source);
  };
  add(w.output());
  for (const vk::DeviceLayerWeights& L : w.layers) {
    add(L.wo);
    for (const vk::DeviceLayerWeights::RowBlock& b : L.qkv) add(b.matrix);
    for (const vk::DeviceMatrix* m :
         {&L.shared.w_gate_up, &L.shared.w_gate, &L.shared.w_up, &L.shared.w_down, &L.router}) {
      add(*m);
    }
    if (L.router.rows > 0) continue;  // a routed layer's FFN matrices are expert stacks
    for (const vk::DeviceMatrix* m : {&L.ffn.w_gate_up, &L.ffn.w_gate, &L.ffn.w_up, &L.ffn.w_down}) add(*m);
  }
  return types;
}

uint32_t align4(uint32_t n) { return (n + 3u) & ~3u; }
constexpr uint64_t kF = sizeof(float);

void check_options(const RunnerOptions& o) {
  if (o.max_step_tokens < 1 || o.max_step_tokens > 65535) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("max_step_tokens {} must be in 1..65535", o.max_step_tokens));
  }
  if (o.max_step_seqs < 1 || o.max_step_seqs > o.max_step_tokens) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("max_step_seqs {} must be in 1..max_step_tokens ({})", o.max_step_seqs, o.max_step_tokens));
  }
  if (o.max_context < 0) throw Error(ErrorCode::kInvalidArgument, "max_context must not be negative");
  if (o.state_slots < 0 || o.state_checkpoints < 0) {
    throw Error(ErrorCode::kInvalidArgument, "state_slots and state_checkpoints must not be negative");
  }
}

}  // namespace

VulkanRunner::VulkanRunner(const LlamaModel& model, const RunnerOptions& options)
    : model_(model),
      config_(model.config()),
      options_(options),
      device_(vk::Device::create(vk::DeviceOptions{options.device, -1, options.disk_pipeline_cache})) {
  const LlamaConfig& c = config_;
  check_options(options);
  for (const LayerSpec& l : c.layers) {
    if (l.mixer == Mixer::kDeltaNet) {
      if (l.deltanet.head_dim > VKS_DELTANET_MAX_HEAD_DIM || l.deltanet.conv_channels() % 4 != 0 ||
          l.deltanet.v_dim() % 4 != 0) {
        throw Error(ErrorCode::kUnsupported,
                    fmt::format("the Vulkan runner runs Gated DeltaNet heads of up to {} values with q/k/v widths "
                                "multiples of 4 (this model: head {}, conv channels {}); run it on the CPU (--cpu)",
                                VKS_DELTANET_MAX_HEAD_DIM, l.deltanet.head_dim, l.deltanet.conv_channels()));
      }
      continue;
    }
    vk::check_attention_shape(c.n_heads, l.attention.n_kv_heads, l.attention.head_dim, l.attention.rope_dim);
  }
  kernels_.emplace(device_);
  std::string family = options.matmul_kernels;
  if (const char* env = std::getenv("VKSTREAM_MATMUL_KERNELS"); family.empty() && env != nullptr) family = env;
  std::string tile = options.lanes_tile;
  if (const char* env = std::getenv("VKSTREAM_LANES_TILE"); tile.empty() && env != nullptr) tile = env;
  ops_.emplace(*kernels_, vk::choose_matmul_family(device_.info(), family), vk::lanes_wide_tile_for(device_.info(), tile));
  std::string split_keys = options.attention_split_keys;
  if (const char* env = std::getenv("VKSTREAM_ATTN_SPLIT_KEYS"); split_keys.empty() && env != nullptr) split_keys = env;
  attn_split_keys_ = vk::attention_split_keys_for(device_.info(), split_keys);
  // The KV pool is planned first (arithmetic only): the weights' share of the device's memory is
  // what the pool leaves, so an automatic expert split leaves room for it.
  const int32_t window_blocks = resolve_window_blocks(c, options.num_window_blocks, options.block_size,
                                                      options.max_step_seqs, options.max_step_tokens, options.num_blocks);
  const vk::KvCacheShape kv_shape =
      vk::plan_kv_cache(c, options.block_size, options.num_blocks, options.kv_budget_bytes,
                        device_.max_texel_binding_bytes(), options.kv_type_k, options.kv_type_v, window_blocks);
  uint64_t weight_budget = options.device_weight_budget;
  if (const uint64_t memory = device_.info().device_local_bytes; weight_budget == 0 && memory > 0) {
    weight_budget = memory > kv_shape.total_bytes() ? memory - kv_shape.total_bytes() : 1;  // (0: no limit)
  }
  weights_ = vk::upload_weights(device_, model, options.cpu_expert_layers, weight_budget);
  // A GPU driver's code for a token alone and in a batch must give the same bits (invariance_check.h);
  // on CPU devices (lavapipe) the kernel tests check that, and each check would compile pipelines
  // for seconds.
  if (device_.info().type != VK_PHYSICAL_DEVICE_TYPE_CPU) {
    const bool forced = !family.empty() && family != "auto";
    const vk::MatmulFamily settled =
        vk::settle_matmul_family(device_, *kernels_, ops_->matmul_family(), forced, ops_->lanes_wide_tile(),
                                 product_types(*weights_), static_cast<uint32_t>(std::min(options.max_step_tokens, 40)));
    if (settled != ops_->matmul_family()) ops_.emplace(*kernels_, settled, ops_->lanes_wide_tile());
  }
  // Before the pipelines are built (a CPU device compiles each for seconds): a Q/K/V block after the
  // first writes from its first row on, through a view that must be 16-byte aligned.
  for (size_t l = 0; l < c.n_layers; ++l) {
    for (const vk::DeviceLayerWeights::RowBlock& b : weights_->layers[l].qkv) {
      if (b.first_row % 4 != 0) {
        throw Error(ErrorCode::kUnsupported, "Q, K, V of different types (or a gated query) need q_dim and kv_dim "
                                             "multiples of 4");
      }
    }
  }
  // Attention reads each pool whole through its texel view. Before the pipelines: they are
  // specialized for the pools' types, and a type the model cannot take fails before any compile.
  kv_.emplace(device_, kv_shape);
  create_pipelines();

  const uint64_t max_binding = device_.max_binding_bytes();
  const vk::KvCacheShape& kv = kv_->shape();
  const int64_t pool_tokens = int64_t{kv.num_blocks} * kv.block_size;
  int64_t max_context = options.max_context > 0 ? options.max_context : (c.context_length > 0 ? c.context_length : 4096);
  max_context = std::min(max_context, pool_tokens);
  const int64_t attention_keys =
      static_cast<int64_t>(vk::attention_max_keys(c.head_dim, ops_->matmul_family(), attn_split_keys_));
  if (device_.info().type == VK_PHYSICAL_DEVICE_TYPE_CPU && max_context > attention_keys) {
    // lavapipe ends a shader's loops after 65,535 iterations: attention could not reach further keys.
    spdlog::warn("vulkan: context limited to {} tokens on the CPU device {} (its shader loop limit, head_dim {})",
                 attention_keys, device_.info().name, c.head_dim);
    max_context = attention_keys;
  }
  // The engine checks requests against config().context_length: make it the longest sequence this
  // runner holds, so a request past it is refused up front instead of failing its step.
  if (c.context_length == 0 || max_context < int64_t{c.context_length}) {
    config_.context_length = static_cast<uint32_t>(max_context);
  }
  limits_ = StepLimits{static_cast<int32_t>(c.vocab_size), kv.block_size, kv.num_blocks, options.max_step_tokens,
                       options.max_step_seqs, static_cast<int32_t>((max_context + kv.block_size - 1) / kv.block_size),
                       0, kv.window_blocks};

  dim_s_ = align4(c.dim);
  q_s_ = align4(c.q_dim());
  qkv_s_ = align4(c.q_dim() + 2 * c.kv_dim());
  for (const LayerSpec& l : c.layers) {  // the widest input products and mixer output of any layer
    const AttentionSpec& a = l.attention;
    const DeltaNetSpec& d = l.deltanet;
    if (l.mixer == Mixer::kDeltaNet) {
      qkv_s_ = std::max(qkv_s_, align4(d.conv_channels() + d.v_dim() + 2 * d.n_v_heads));
      q_s_ = std::max(q_s_, align4(d.v_dim()));
      dn_conv_s_ = std::max(dn_conv_s_, align4(d.conv_channels()));
    } else if (a.output_gate) {
      qkv_s_ = std::max(qkv_s_, align4(2 * c.n_heads * a.head_dim + 2 * a.kv_dim()));
    }
  }
  gate_up_s_ = align4(2 * align4(c.max_ffn_hidden()));
  vocab_s_ = align4(c.vocab_size);
  const uint64_t T = static_cast<uint64_t>(options.max_step_tokens);
  const uint64_t S = static_cast<uint64_t>(options.max_step_seqs);
  // The matrix kernels read their x through a texel view of the whole buffer (xn_, or x_ itself
  // where the products norm it (Ops::fuses_rmsnorm), att_, gate_up_, xo_), so those buffers must
  // also fit the device's texel-buffer limit.
  const uint64_t max_texel_binding = device_.max_texel_binding_bytes();
  auto activation = [&](uint64_t rows, uint32_t stride, const char* what, bool read_as_x) {
    const uint64_t bytes = rows * stride * kF;
    const uint64_t limit = read_as_x ? max_texel_binding : max_binding;
    if (bytes > limit) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{} buffer of {} MiB exceeds the device's {} MiB {}binding; lower "
                              "max_step_tokens/max_step_seqs",
                              what, bytes >> 20, limit >> 20, read_as_x ? "texel-buffer " : ""));
    }
    return device_.create_buffer(bytes);
  };
  x_ = activation(T, dim_s_, "residual", ops_->fuses_rmsnorm());
  // Expert layers norm x into xn_ whatever the family (their inputs are gathered from it).
  if (!ops_->fuses_rmsnorm() || c.n_experts > 1) xn_ = activation(T, dim_s_, "norm", true);
  qkv_ = activation(T, qkv_s_, "qkv", false);
  att_ = activation(T, q_s_, "attention", true);
  gate_up_ = activation(T, gate_up_s_, "gate_up", true);
  xo_ = activation(S, dim_s_, "output rows", true);
  for (const vk::DeviceLayerWeights& L : weights_->layers) {
    if ((L.post_attn_norm.valid() || L.post_ffn_norm.valid() || L.per_layer_post_norm.valid()) && !sub_.valid()) {
      sub_ = activation(T, dim_s_, "sublayer", false);
    }
  }
  if (c.per_layer_input_dim > 0) {
    // A layer's slice is bound at l * P floats: every slice must start at a bindable offset.
    const uint64_t slice_bytes = uint64_t{c.per_layer_input_dim} * kF;
    const uint64_t align = std::max<uint64_t>(device_.info().min_storage_buffer_offset_alignment, 16);
    if (slice_bytes % align != 0) {
      throw Error(ErrorCode::kUnsupported, fmt::format("per-layer inputs of {} values ({} bytes) cannot be bound at "
                                                       "{}-byte offsets on {}; run the model on the CPU (--cpu)",
                                                       c.per_layer_input_dim, slice_bytes, align, device_.info().name));
    }
    per_layer_s_ = align4(c.n_layers * c.per_layer_input_dim);
    per_layer_in_ = activation(T, per_layer_s_, "per-layer inputs", false);
    per_layer_tok_ = activation(T, per_layer_s_, "per-layer token rows", false);
    per_layer_gate_ = activation(T, per_layer_s_, "per-layer gate", true);
  }
  if (ops_->matmul_family() == vk::MatmulFamily::kDot) {
    // The Q8 rows of the widest input any product takes (Ops::bind_q8_scratch), a row per (token,
    // expert choice) in the experts' products.
    const uint32_t widest = std::max({dim_s_, q_s_, gate_up_s_, per_layer_s_});
    uint64_t rows = T;
    for (const LayerSpec& l : c.layers) rows = std::max<uint64_t>(rows, T * l.ffn.n_used);
    q8_ = activation(rows, vk::q8_row_words(widest), "Q8 activations", true);
    ops_->bind_q8_scratch(q8_.view());
  }
  if (vk::lanes_layout(ops_->matmul_family())) {
    // Split states of decode steps over long rows (vk::attention_parallel_splits). Past the binding
    // limit the longest rows' steps run their splits one workgroup each, as prefill does.
    attn_partials_ = device_.create_buffer(std::min<uint64_t>(
        vk::attention_partials_bytes(c.n_heads, c.head_dim, static_cast<uint64_t>(max_context), attn_split_keys_),
        max_binding));
    attn_split_counts_ = device_.create_buffer(vk::attention_split_counts_bytes(c.n_heads));
  }
  if (c.n_experts > 1) {
    router_s_ = align4(c.n_experts);
    // Layers whose experts run on the CPU route there too (host_experts.h): the device's routing
    // buffers and kernel limits are for the others alone.
    std::vector<const LayerSpec*> device_routed;
    for (uint32_t l = 0; l < c.n_layers; ++l) {
      if (c.layers[l].ffn.routed() && !weights_->split.on_host[l]) device_routed.push_back(&c.layers[l]);
    }
    FfnSpec widest;  // the most rows and groups any device-routed layer's plan needs
    for (const LayerSpec* l : device_routed) {
      if (l->ffn.n_used * l->ffn.n_experts >= widest.n_used * widest.n_experts) widest = l->ffn;
    }
    const uint64_t rows = vk::expert_plan_max_rows(static_cast<uint32_t>(T), widest);
    // Routing runs on the device (moe_route_f32, moe_plan_i32); their loops must fit lavapipe's budget.
    for (const LayerSpec* layer : device_routed) {
      const LayerSpec& l = *layer;
      const uint64_t route = vk::moe_route_loop_iterations(l.ffn.n_experts, l.ffn.n_used);
      const uint64_t plan = vk::moe_plan_loop_iterations(static_cast<uint32_t>(T) * l.ffn.n_used, l.ffn.n_experts,
                                                         vk::expert_plan_max_groups(static_cast<uint32_t>(T), l.ffn));
      // The same bounds record_moe_route and record_moe_plan enforce on every device: refused here,
      // not at the first step that routes that many.
      if (l.ffn.n_experts > VKS_MOE_MAX_EXPERTS || std::max(route, plan) > VKS_LAVAPIPE_LOOP_BUDGET) {
        throw Error(ErrorCode::kUnsupported,
                    fmt::format("routing {} of {} experts for {} tokens a step on {} exceeds its kernels' limits (at "
                                "most {} experts; loop budget); lower max_step_tokens or run it on the CPU (--cpu)",
                                l.ffn.n_used, l.ffn.n_experts, T, device_.info().name, VKS_MOE_MAX_EXPERTS));
      }
    }
    if (!device_routed.empty()) {
      router_logits_ = device_.create_buffer(T * router_s_ * kF);
      expert_ids_ = device_.create_buffer(rows * 4);
      expert_gather_ = device_.create_buffer(rows * 4);
      expert_row_expert_ = device_.create_buffer(rows * 4);
      expert_slots_ = device_.create_buffer(uint64_t{vk::expert_plan_max_groups(static_cast<uint32_t>(T), widest)} * 16);
      expert_rows_ = device_.create_buffer(rows * 4);
      expert_weights_ = device_.create_buffer(rows * kF);
      expert_in_ = activation(rows, dim_s_, "expert input", true);
      expert_gate_up_ = activation(rows, gate_up_s_, "expert gate_up", true);
      expert_out_ = activation(rows, dim_s_, "expert output", false);
    }
    for (const LayerSpec& l : c.layers) {
      if (l.ffn.has_shared() && !shared_out_.valid()) shared_out_ = activation(T, dim_s_, "shared expert output", false);
      if (l.ffn.router_input == RouterInput::kScaledNorm && !router_in_.valid()) {
        router_in_ = activation(T, dim_s_, "router input", true);
      }
      if (l.ffn.shared_gated && !shared_gate_.valid()) shared_gate_ = activation(T, 4, "shared expert gate", false);
    }
  }
  if (weights_->split.any_on_host()) {
    host_experts_ = std::make_unique<vk::HostExperts>(model, static_cast<uint32_t>(T));
    host_xn_ = make_io(T * dim_s_ * kF, false);
    host_out_ = make_io(T * dim_s_ * kF, true);
    for (uint32_t l = 0; l < c.n_layers; ++l) {
      if (weights_->split.on_host[l] && c.layers[l].ffn.router_input == RouterInput::kScaledNorm) {
        host_x_ = make_io(T * dim_s_ * kF, false);
        break;
      }
    }
  }
  if (c.has_recurrent_layers()) {
    const int32_t live = options.live_state_slots();  // check_options refused negative counts
    states_ = vk::RecurrentStateBuffers(device_, c, live + options.state_checkpoints, max_binding);
    dn_conv_ = activation(T, dn_conv_s_, "DeltaNet conv", false);
    seq_states_ = make_io(S * VKS_DELTANET_SEQ_FIELDS * 4, true);
    limits_.state_slots = live;  // the checkpoints lie past the live slots
    spdlog::info("vulkan: {} recurrent state slots ({} live) of {:.1f} MiB", states_.slots(), live,
                 static_cast<double>(config_.recurrent_state_bytes()) / (1 << 20));
  }
  tokens_ = make_io(T * 4, true);
  positions_ = make_io(T * 4, true);
  slots_ = make_io(T * 4, true);
  token_seq_ = make_io(T * 4, true);
  block_tables_ = make_io(S * static_cast<uint64_t>(limits_.max_blocks_per_seq) * 4, true);
  if (kv.window_blocks > 0) {
    window_slots_ = make_io(T * 4, true);
    window_block_tables_ = make_io(S * static_cast<uint64_t>(limits_.max_blocks_per_seq) * 4, true);
  }
  logits_ = make_io(S * vocab_s_ * kF, false);
  ids_ = make_io(S * 4, false);
  hidden_ = make_io(T * dim_s_ * kF, false);
  if (hidden_.device.size() > max_binding) {
    throw Error(ErrorCode::kInvalidArgument, "hidden-state buffer exceeds the device's binding; lower max_step_tokens");
  }
  if (logits_.device.size() > max_binding) {
    throw Error(ErrorCode::kInvalidArgument, "logits buffer exceeds the device's binding; lower max_step_seqs");
  }

  cmd_ = device_.create_command_buffer();
  // A recording per decode batch size and split count in use: a few dozen cover a busy server's
  // mix (each holds a command buffer and a descriptor pool).
  constexpr size_t kReplayCapacity = 32;
  if (options_.replay_decode_steps) replays_.emplace(device_, kReplayCapacity);
  fence_ = device_.create_fence(false);
  // Zero everything once so padding lanes and never-written KV slots hold numbers, not garbage.
  cmd_.begin();
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    if (c.layers[l].mixer != Mixer::kAttention) continue;
    cmd_.fill(kv_->k_buffer(l), 0, VK_WHOLE_SIZE, 0);
    cmd_.fill(kv_->v_buffer(l), 0, VK_WHOLE_SIZE, 0);
  }
  states_.record_zero(cmd_);
  for (vk::Buffer* b : {&x_, &xn_, &qkv_, &att_, &attn_split_counts_, &gate_up_, &sub_, &xo_, &logits_.device,
                        &expert_in_, &expert_gate_up_, &expert_out_, &shared_out_, &router_in_, &per_layer_in_,
                        &per_layer_tok_, &per_layer_gate_, &shared_gate_, &dn_conv_}) {
    if (b->valid()) cmd_.fill(*b, 0, VK_WHOLE_SIZE, 0);  // xn_ is absent where the products norm x
  }
  cmd_.end();
  device_.submit_and_wait(cmd_);
  kernels_->save_cache();
  spdlog::info("vulkan: {} ready: {} matrix kernels, {} KV blocks of {} tokens ({} window-pool blocks; {} MiB, K {}, "
               "V {}), step limits {} tokens / {} seqs, longest sequence {} tokens",
               device_.info().name, vk::matmul_family_name(ops_->matmul_family()), kv.num_blocks, kv.block_size,
               kv.window_blocks, kv.total_bytes() >> 20, kv_type_name(kv.k_type), kv_type_name(kv.v_type),
               options.max_step_tokens, options.max_step_seqs, int64_t{limits_.max_blocks_per_seq} * kv.block_size);
}

VulkanRunner::~VulkanRunner() {
  try {
    device_.wait_idle();
  } catch (const std::exception& e) {
    spdlog::warn("vulkan: wait_idle at shutdown failed: {}", e.what());
  }
}

// Builds, at start-up, the pipelines this model's forward pass uses (and only those: on a CPU
// device every pipeline is an LLVM compile).
void VulkanRunner::create_pipelines() {
  // rmsnorm_f32 also norms the final hidden state, and qwen3's heads.
  std::set<std::string> names{"rmsnorm_f32", "argmax_f32", "rope_kv_f16"};
  if (config_.embedding_scale != 1.0f) names.insert("scale_f32");
  for (const vk::DeviceLayerWeights& L : weights_->layers) {
    if (L.output_scale != 1.0f) names.insert("scale_f32");
  }
  if (config_.final_softcap > 0.0f) names.insert("softcap_f32");
  for (const vk::DeviceLayerWeights& L : weights_->layers) {
    if (L.bqkv.valid() || L.bo.valid() || L.router_bias.valid()) names.insert("bias_add_f32");
    if (L.post_attn_norm.valid() || L.post_ffn_norm.valid()) names.insert("add_f32");
    if (L.experts_on_host) {
      names.insert("add_f32");  // the CPU's sum into the residual
    } else if (!swiglu_epilogue(L.ffn)) {
      names.insert(L.ffn.activation == FfnActivation::kGeluTanh    ? "geglu_f32"
                   : L.ffn.activation == FfnActivation::kSwigluOai ? "swiglu_oai_f32"
                                                                   : "swiglu_f32");
    }
    if (L.router.rows > 0 && !L.experts_on_host) {  // embed_f32: the row gather
      names.insert({"moe_route_f32", "moe_plan_i32", "moe_combine_f32", "embed_f32"});
    }
    if (L.router.rows > 0 && L.b_gate.valid()) names.insert("bias_add_rows_f32");
    if (L.shared.hidden > 0) {
      names.insert(L.shared.activation == FfnActivation::kGeluTanh ? "geglu_f32" : "swiglu_f32");
      names.insert("add_f32");
    }
    if (L.per_layer_gate.rows > 0) names.insert({"geglu_f32", "add_f32", "scale_f32"});
    if (L.shared_gate_inp.rows > 0) names.insert("sigmoid_gate_f32");
  }
  for (const LayerSpec& l : config_.layers) {
    if (l.mixer == Mixer::kDeltaNet) names.insert({"deltanet_conv_f32", "l2norm_f32", "deltanet_rule_f32", "swiglu_f32"});
    if (l.mixer == Mixer::kAttention && l.attention.output_gate) names.insert("sigmoid_gate_f32");
  }
  names.insert(weights_->token_embd.format->kernel_name(vk::WeightOp::kEmbed));
  if (weights_->per_layer_token_embd.rows > 0) {
    names.insert(weights_->per_layer_token_embd.format->kernel_name(vk::WeightOp::kEmbed));
    ops_->build_weight_kernels(weights_->per_layer_model_proj, false, false);
  }
  // The products as record_layer / record_logits ask for them: normed_matmul's inputs (rmsnorm(x))
  // carry the norm where Ops fuses it, the gate|up stack the SwiGLU epilogue where it fits.
  const bool normed = ops_->fuses_rmsnorm();
  ops_->build_weight_kernels(weights_->output(), false, false);
  for (const vk::DeviceLayerWeights& L : weights_->layers) {
    ops_->build_weight_kernels(L.wo, false, false);
    for (const vk::DeviceLayerWeights::RowBlock& b : L.qkv) ops_->build_weight_kernels(b.matrix, false, normed);
    // Experts read inputs normed beforehand (gathered from xn_), all of them in mul_mat_id products;
    // a dense block may norm them itself.
    const bool routed = L.router.rows > 0;
    ops_->build_weight_kernels(L.router, false, false);
    for (const vk::DeviceMatrix* m : {&L.shared.w_gate, &L.shared.w_up, &L.shared.w_gate_up, &L.shared.w_down,
                                      &L.shared_gate_inp, &L.per_layer_gate, &L.per_layer_proj}) {
      ops_->build_weight_kernels(*m, false, false);
    }
    const vk::DeviceFfn& f = L.ffn;
    ops_->build_weight_kernels(f.w_down, false, false, routed);
    for (const vk::DeviceMatrix* m : {&f.w_gate, &f.w_up}) ops_->build_weight_kernels(*m, false, normed && !routed, routed);
    ops_->build_weight_kernels(f.w_gate_up, swiglu_epilogue(f), normed && !routed, routed);
  }
  for (const std::string& name : names) {
    if (kernels_->has(name)) kernels_->get(name);
  }
  std::set<uint32_t> head_dims;  // the attention pipelines are specialized by head size
  for (const LayerSpec& l : config_.layers) {
    if (l.mixer == Mixer::kAttention) head_dims.insert(l.attention.head_dim);
  }
  for (const uint32_t head_dim : head_dims) {
    vk::attention_kernel(*kernels_, head_dim, ops_->matmul_family(), vk::kv_type_id(kv_->shape().k_type),
                         vk::kv_type_id(kv_->shape().v_type));
  }
}

std::string VulkanRunner::device_name() const { return device_.info().name; }

std::string VulkanRunner::kv_type() const {
  const vk::KvCacheShape& kv = kv_->shape();
  if (kv.k_type == kv.v_type) return std::string(kv_type_name(kv.k_type));
  return std::string(kv_type_name(kv.k_type)) + "/" + std::string(kv_type_name(kv.v_type));
}

void VulkanRunner::set_profiling(bool on) {
  if (on && !profiler_) profiler_ = std::make_unique<vk::StepProfiler>(device_, 4096);
  if (!on) profiler_.reset();
  profile_ms_.clear();
}

VulkanRunner::IoBuffer VulkanRunner::make_io(uint64_t bytes, bool input) {
  IoBuffer io;
  io.device = device_.create_buffer(std::max<uint64_t>(bytes, 16));
  if (!io.device.host_visible()) {
    io.host = device_.create_buffer(io.device.size(), input ? vk::BufferKind::kStaging : vk::BufferKind::kReadback);
  }
  return io;
}

void VulkanRunner::mark(vk::CommandBuffer& cmd, const char* label) {
  if (profiler_) profiler_->mark(cmd, label);
}

void VulkanRunner::norm_for_matmul(vk::CommandBuffer& cmd, const vk::Buffer& norm, uint32_t n_tokens) {
  if (ops_->fuses_rmsnorm()) return;  // the products norm x themselves
  ops_->rmsnorm(cmd, x_.view(), dim_s_, norm.view(), xn_.view(), dim_s_, n_tokens, config_.dim, config_.norm_eps);
  mark(cmd, "rmsnorm");
  barrier(cmd);
}

void VulkanRunner::normed_matmul(vk::CommandBuffer& cmd, const vk::DeviceMatrix& w, const vk::Buffer& norm,
                                 vk::BufferView y, uint32_t y_stride, uint32_t n_tokens, bool swiglu) {
  if (ops_->fuses_rmsnorm()) {
    ops_->matmul_rmsnorm(cmd, weight_op(n_tokens), w, x_.view(), dim_s_, norm.view(), config_.norm_eps, y, y_stride,
                         n_tokens, swiglu);
  } else if (swiglu) {
    ops_->matmul_swiglu(cmd, weight_op(n_tokens), w, xn_.view(), dim_s_, y, y_stride, n_tokens);
  } else {
    matmul(cmd, w, xn_.view(), dim_s_, y, y_stride, n_tokens, false);
  }
}

// The SwiGLU epilogue applies silu(gate) * up straight to the products: no other activation, and no
// biases to add between. A stack of experts fits it whatever its parts (each holds whole gate|up
// blocks: Ops::matmul_id).
bool VulkanRunner::swiglu_epilogue(const vk::DeviceFfn& f) {
  return f.activation == FfnActivation::kSilu && !f.biased && f.gate_up_fused &&
         (f.n_experts > 1 || vk::Ops::swiglu_epilogue_fits(f.w_gate_up));
}

void VulkanRunner::record_activation(vk::CommandBuffer& cmd, const vk::DeviceFfn& f, vk::BufferView gate,
                                     vk::BufferView up, uint32_t stride, uint32_t n_rows) {
  switch (f.activation) {
    case FfnActivation::kSilu: return ops_->swiglu(cmd, gate, up, stride, gate, stride, n_rows, f.hidden);
    case FfnActivation::kGeluTanh: return ops_->geglu(cmd, gate, up, stride, gate, stride, n_rows, f.hidden);
    case FfnActivation::kSwigluOai: return ops_->swiglu_oai(cmd, gate, up, stride, gate, stride, n_rows, f.hidden);
  }
}

void VulkanRunner::record_mixer_output(vk::CommandBuffer& cmd, const vk::DeviceLayerWeights& L, uint32_t n,
                                       const char* label) {
  matmul(cmd, L.wo, att_.view(), q_s_, sublayer_out(L.post_attn_norm), dim_s_, n, !L.post_attn_norm.valid());
  mark(cmd, label);
  barrier(cmd);
  finish_sublayer(cmd, L.bo, L.post_attn_norm, n);
}

void VulkanRunner::finish_sublayer(vk::CommandBuffer& cmd, const vk::Buffer& bias, const vk::Buffer& post_norm,
                                   uint32_t n) {
  const vk::BufferView out = sublayer_out(post_norm);
  if (bias.valid()) {
    ops_->bias_add(cmd, out, dim_s_, bias.view(), n, config_.dim);
    mark(cmd, "bias.out");
    barrier(cmd);
  }
  if (!post_norm.valid()) return;
  ops_->rmsnorm(cmd, out, dim_s_, post_norm.view(), out, dim_s_, n, config_.dim, config_.norm_eps);
  mark(cmd, "post_norm");
  barrier(cmd);
  ops_->add(cmd, x_.view(), out, dim_s_, x_.view(), dim_s_, n, config_.dim);
  mark(cmd, "residual");
  barrier(cmd);
}

vk::WeightOp VulkanRunner::weight_op(uint32_t n_tokens) const {
  const int32_t threshold = options_.matvec_max_tokens;
  if (threshold < 0) return vk::Ops::weight_op_for(n_tokens);
  return n_tokens <= static_cast<uint32_t>(threshold) ? vk::WeightOp::kMatvec : vk::WeightOp::kMatmul;
}

void VulkanRunner::matmul(vk::CommandBuffer& cmd, const vk::DeviceMatrix& w, vk::BufferView x, uint32_t x_stride,
                          vk::BufferView y, uint32_t y_stride, uint32_t n_tokens, bool accumulate) {
  if (weight_op(n_tokens) == vk::WeightOp::kMatvec) {
    ops_->matvec_only(cmd, w, x, x_stride, y, y_stride, n_tokens, accumulate);
  } else {
    ops_->matmul_only(cmd, w, x, x_stride, y, y_stride, n_tokens, accumulate);
  }
}

void VulkanRunner::stage(IoBuffer& io, const void* data, uint64_t bytes) {
  std::memcpy(io.mapped(), data, bytes);
  device_.flush(io.host_side(), 0, VK_WHOLE_SIZE);
}

void VulkanRunner::record_upload(vk::CommandBuffer& cmd, const IoBuffer& io, uint64_t bytes) {
  if (io.host.valid()) cmd.copy(io.host, 0, io.device, 0, bytes);
}

void VulkanRunner::stage_inputs(const StepInputs& in, const StepBatch& batch) {
  const uint64_t tok_bytes = uint64_t(in.n_tokens) * 4;
  const uint64_t table_bytes = in.block_tables.size() * 4;
  stage(tokens_, batch.tokens.data(), tok_bytes);
  stage(positions_, batch.positions.data(), tok_bytes);
  stage(slots_, batch.slot_mapping.data(), tok_bytes);
  stage(token_seq_, in.token_seq.data(), tok_bytes);
  stage(block_tables_, in.block_tables.data(), table_bytes);
  if (limits_.num_window_blocks > 0) {
    stage(window_slots_, batch.window_slot_mapping.data(), tok_bytes);
    stage(window_block_tables_, in.window_block_tables.data(), table_bytes);
  }
  if (states_.slots() > 0) {
    seq_states_host_.clear();
    longest_chunk_ = 0;
    for (const SeqChunk& s : batch.seqs) {
      seq_states_host_.insert(seq_states_host_.end(), {s.token_offset, s.n_tokens, s.state_slot, s.n_past == 0 ? 1 : 0});
      longest_chunk_ = std::max(longest_chunk_, static_cast<uint32_t>(s.n_tokens));
    }
    stage(seq_states_, seq_states_host_.data(), seq_states_host_.size() * 4);
  }
}

void VulkanRunner::record_uploads(vk::CommandBuffer& cmd, const StepInputs& in) {
  const uint64_t tok_bytes = uint64_t(in.n_tokens) * 4;
  const uint64_t table_bytes = in.block_tables.size() * 4;
  for (const IoBuffer* io : {&tokens_, &positions_, &slots_, &token_seq_}) record_upload(cmd, *io, tok_bytes);
  record_upload(cmd, block_tables_, table_bytes);
  if (limits_.num_window_blocks > 0) {
    record_upload(cmd, window_slots_, tok_bytes);
    record_upload(cmd, window_block_tables_, table_bytes);
  }
  if (states_.slots() > 0) record_upload(cmd, seq_states_, seq_states_host_.size() * 4);
  if (tokens_.host.valid()) cmd.barrier(vk::Stage::kTransfer, vk::Stage::kCompute);
  cmd.barrier(vk::Stage::kHost, vk::Stage::kCompute);
}

void VulkanRunner::copy_recurrent_state(int32_t from, int32_t to) {
  const int32_t n = states_.slots();
  if (from < 0 || from >= n || to < 0 || to >= n) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("recurrent state copy {} -> {} outside the {} slots", from, to, n));
  }
  if (from == to) return;
  // The steps before wrote the states in compute; the steps after read them there.
  cmd_.begin();
  cmd_.barrier(vk::Stage::kCompute, vk::Stage::kTransfer);
  states_.record_copy(cmd_, from, to);
  cmd_.barrier(vk::Stage::kTransfer, vk::Stage::kCompute);
  submit_and_wait(cmd_);
}

// One decoder layer over the step's n_tokens rows (llama2.c's forward(), batched).
void VulkanRunner::record_layer(vk::CommandBuffer& cmd, uint32_t l, const StepInputs& in) {
  const uint32_t n = static_cast<uint32_t>(in.n_tokens);
  const vk::DeviceLayerWeights& L = weights_->layers[l];
  if (config_.layers[l].mixer == Mixer::kDeltaNet) {
    record_deltanet_mixer(cmd, l, in);
  } else {
    record_attention_mixer(cmd, l, in);
  }

  // Feed-forward block: x += down(act(xn Wgate, xn Wup)), xn = rmsnorm(x), of one dense block or of
  // the experts each token's router picks.
  if (L.router.rows > 0) {
    record_expert_ffn(cmd, l, n);
  } else {
    record_dense_ffn(cmd, L, n);
  }
  if (L.per_layer_gate.rows > 0) record_per_layer_input(cmd, l, n);
  if (L.output_scale != 1.0f) {  // Gemma 4: the layer's output, residual included, scaled
    ops_->scale(cmd, x_.view(), dim_s_, n, config_.dim, L.output_scale);
    mark(cmd, "layer.scale");
    barrier(cmd);
  }
}

void VulkanRunner::record_input_products(vk::CommandBuffer& cmd, const vk::DeviceLayerWeights& L, uint32_t n) {
  norm_for_matmul(cmd, L.attn_norm, n);
  for (const vk::DeviceLayerWeights::RowBlock& b : L.qkv) {
    const vk::BufferView out = b.first_row == 0 ? qkv_.view() : qkv_.view(b.first_row * kF, VK_WHOLE_SIZE);
    normed_matmul(cmd, b.matrix, L.attn_norm, out, qkv_s_, n);
  }
  mark(cmd, "matmul.qkv");
  barrier(cmd);
}

// Attention: q|k|v = rmsnorm(x) Wqkv; rope(q, k); cache k, v; att = attention; x += att Wo.
void VulkanRunner::record_attention_mixer(vk::CommandBuffer& cmd, uint32_t l, const StepInputs& in) {
  const uint32_t n = static_cast<uint32_t>(in.n_tokens);
  const LlamaConfig& c = config_;
  const vk::DeviceLayerWeights& L = weights_->layers[l];
  const AttentionSpec& spec = c.layers[l].attention;
  // This layer's head geometry (Gemma 4's global layers differ from its window layers). Each layer's
  // K/V pool holds rows of its own kv_dim, written by rope_kv and read by attention alike.
  const uint32_t head_dim = spec.head_dim, n_kv_heads = spec.n_kv_heads;
  const uint32_t q_dim = c.n_heads * head_dim, kv_dim = spec.kv_dim();
  // A window-pool layer's K/V: its own pool size, written and read through the window tables.
  const bool window_pool = kv_->shape().in_window_pool(l);
  const vk::BufferView slots = (window_pool ? window_slots_ : slots_).device.view();
  const vk::BufferView tables = (window_pool ? window_block_tables_ : block_tables_).device.view();

  record_input_products(cmd, L, n);
  // Architecture branches on the tensors a layer has: Q/K/V biases (qwen2), per-head Q/K norms (qwen3).
  if (L.bqkv.valid()) {
    ops_->bias_add(cmd, qkv_.view(), qkv_s_, L.bqkv.view(), n, q_dim + 2 * kv_dim);
    mark(cmd, "bias.qkv");
    barrier(cmd);
  }
  if (L.q_norm.valid() || L.k_norm.valid() || L.value_norm.valid()) {
    if (L.q_norm.valid()) ops_->rmsnorm_heads(cmd, qkv_.view(), qkv_s_, L.q_norm.view(), n, c.n_heads, head_dim, c.norm_eps);
    if (L.k_norm.valid()) {
      ops_->rmsnorm_heads(cmd, qkv_.view(q_dim * kF, VK_WHOLE_SIZE), qkv_s_, L.k_norm.view(), n, n_kv_heads, head_dim,
                          c.norm_eps);
    }
    if (L.value_norm.valid()) {  // Gemma 4: V (the K projection where there is no attn_v) normed without a weight
      ops_->rmsnorm_heads(cmd, qkv_.view((q_dim + kv_dim) * kF, VK_WHOLE_SIZE), qkv_s_, L.value_norm.view(), n,
                          n_kv_heads, head_dim, c.norm_eps);
    }
    mark(cmd, "norm.qk");
    barrier(cmd);
  }
  // Rope on Q in place, rope on K into the cache, V into the cache: one dispatch.
  vk::record_rope_kv(cmd, *kernels_,
                     vk::RopeKvBindings{qkv_.view(), positions_.device.view(), weights_->rope_tables[L.rope_table].view(), kv_->k(l),
                                        kv_->v(l), slots},
                     gpu::RopeKvParams{n, c.n_heads, spec.shares_kv() ? 0 : n_kv_heads, head_dim, spec.rope_dim, qkv_s_, 0, q_dim,
                                       q_dim + kv_dim, kv_->n_slots(l), L.rope_angle_scale,
                                       c.rope_mode == RopeMode::kNeox ? uint32_t{VKS_ROPE_MODE_NEOX}
                                                                      : uint32_t{VKS_ROPE_MODE_NORM},
                                       L.rope_mscale_extra, vk::kv_type_id(kv_->shape().k_type),
                                       vk::kv_type_id(kv_->shape().v_type), kv_->shape().k_scales_at(l),
                                       kv_->shape().v_scales_at(l)});
  mark(cmd, "rope_kv");
  barrier(cmd);
  gpu::AttnParams ap{};
  ap.n_tokens = n;
  ap.n_heads = c.n_heads;
  ap.n_kv_heads = n_kv_heads;
  ap.head_dim = head_dim;
  ap.q_stride = qkv_s_;
  ap.q_offset = 0;
  ap.out_stride = q_s_;
  ap.block_size = static_cast<uint32_t>(limits_.block_size);
  ap.max_blocks_per_seq = static_cast<uint32_t>(limits_.max_blocks_per_seq);
  ap.n_slots = kv_->n_slots(l);
  ap.scale = spec.scale;
  ap.window = spec.window;
  ap.softcap = spec.softcap;
  ap.has_sinks = L.sinks.valid() ? 1u : 0u;
  ap.k_type = vk::kv_type_id(kv_->shape().k_type);
  ap.v_type = vk::kv_type_id(kv_->shape().v_type);
  ap.k_scales_at = kv_->shape().k_scales_at(l);
  ap.v_scales_at = kv_->shape().v_scales_at(l);
  ap.split_keys = attn_split_keys_;
  vk::record_attention(cmd, *kernels_,
                       vk::AttnBindings{qkv_.view(), kv_->k(l), kv_->v(l), positions_.device.view(),
                                        token_seq_.device.view(), tables, att_.view(),
                                        attn_partials_.valid() ? attn_partials_.view() : vk::BufferView{},
                                        L.sinks.valid() ? L.sinks.view() : vk::BufferView{},
                                        attn_split_counts_.valid() ? attn_split_counts_.view() : vk::BufferView{}},
                       ap, ops_->matmul_family(), static_cast<uint64_t>(in.longest_keys));
  mark(cmd, "attention");
  barrier(cmd);
  if (spec.output_gate) {  // Qwen3.5: att *= sigmoid(gate), the gates after V in each q|k|v row
    ops_->sigmoid_gate(cmd, att_.view(), q_s_, qkv_.view(uint64_t{q_dim + 2 * kv_dim} * kF, VK_WHOLE_SIZE), qkv_s_,
                       n, q_dim, false);
    mark(cmd, "attention.gate");
    barrier(cmd);
  }
  record_mixer_output(cmd, L, n, "matmul.wo");
}

// The dense block (fused with the norm where the products norm x themselves).
void VulkanRunner::record_dense_ffn(vk::CommandBuffer& cmd, const vk::DeviceLayerWeights& L, uint32_t n) {
  const vk::DeviceFfn& f = L.ffn;
  norm_for_matmul(cmd, L.ffn_norm, n);
  if (swiglu_epilogue(f)) {
    // One dispatch: each workgroup takes gate and up rows of the same outputs and stores
    // silu(gate) * up at the start of each gate_up row.
    normed_matmul(cmd, f.w_gate_up, L.ffn_norm, gate_up_.view(), gate_up_s_, n, true);
    mark(cmd, "matmul.gate_up_swiglu");
    barrier(cmd);
  } else {
    // Gate at the start of each gate_up row, up at up_at (hidden, or hidden rounded up to 4 when
    // the halves come from two matmuls).
    const uint64_t up_at = (f.gate_up_fused ? f.hidden : align4(f.hidden)) * kF;
    if (f.gate_up_fused) {
      normed_matmul(cmd, f.w_gate_up, L.ffn_norm, gate_up_.view(), gate_up_s_, n);
    } else {
      normed_matmul(cmd, f.w_gate, L.ffn_norm, gate_up_.view(), gate_up_s_, n);
      normed_matmul(cmd, f.w_up, L.ffn_norm, gate_up_.view(up_at, VK_WHOLE_SIZE), gate_up_s_, n);
    }
    mark(cmd, "matmul.gate_up");
    barrier(cmd);
    record_activation(cmd, f, gate_up_.view(), gate_up_.view(up_at, VK_WHOLE_SIZE), gate_up_s_, n);
    mark(cmd, "activation");
    barrier(cmd);
  }
  matmul(cmd, f.w_down, gate_up_.view(), gate_up_s_, sublayer_out(L.post_ffn_norm), dim_s_, n,
         !L.post_ffn_norm.valid());
  mark(cmd, "matmul.down");
  barrier(cmd);
  finish_sublayer(cmd, vk::Buffer{}, L.post_ffn_norm, n);
}

// The CPU's order (cpu_embed): projected, scaled by 1/sqrt(dim), normed per layer; plus the
// token's rows times sqrt(P); the sum times 1/sqrt(2).
void VulkanRunner::record_per_layer_inputs(vk::CommandBuffer& cmd, uint32_t n) {
  const LlamaConfig& c = config_;
  const uint32_t p = c.per_layer_input_dim, all = p * c.n_layers;
  matmul(cmd, weights_->per_layer_model_proj, x_.view(), dim_s_, per_layer_in_.view(), per_layer_s_, n, false);
  ops_->embed(cmd, weights_->per_layer_token_embd, tokens_.device.view(), n, per_layer_tok_.view(), per_layer_s_);
  mark(cmd, "per_layer.proj");
  barrier(cmd);
  ops_->scale(cmd, per_layer_in_.view(), per_layer_s_, n, all, 1.0f / std::sqrt(static_cast<float>(c.dim)));
  ops_->scale(cmd, per_layer_tok_.view(), per_layer_s_, n, all, std::sqrt(static_cast<float>(p)));
  mark(cmd, "per_layer.scale");
  barrier(cmd);
  ops_->rmsnorm_heads(cmd, per_layer_in_.view(), per_layer_s_, weights_->per_layer_proj_norm.view(), n, c.n_layers, p,
                      c.norm_eps);
  mark(cmd, "per_layer.norm");
  barrier(cmd);
  ops_->add(cmd, per_layer_in_.view(), per_layer_tok_.view(), per_layer_s_, per_layer_in_.view(), per_layer_s_, n, all);
  mark(cmd, "per_layer.add");
  barrier(cmd);
  ops_->scale(cmd, per_layer_in_.view(), per_layer_s_, n, all, 1.0f / std::sqrt(2.0f));
  mark(cmd, "per_layer.scale");
  barrier(cmd);
}

void VulkanRunner::record_per_layer_input(vk::CommandBuffer& cmd, uint32_t l, uint32_t n) {
  const LlamaConfig& c = config_;
  const vk::DeviceLayerWeights& L = weights_->layers[l];
  const uint32_t p = c.per_layer_input_dim;
  matmul(cmd, L.per_layer_gate, x_.view(), dim_s_, per_layer_gate_.view(), per_layer_s_, n, false);
  mark(cmd, "per_layer.gate");
  barrier(cmd);
  ops_->geglu(cmd, per_layer_gate_.view(), per_layer_in_.view(uint64_t{l} * p * kF, VK_WHOLE_SIZE), per_layer_s_,
              per_layer_gate_.view(), per_layer_s_, n, p);
  mark(cmd, "per_layer.activation");
  barrier(cmd);
  matmul(cmd, L.per_layer_proj, per_layer_gate_.view(), per_layer_s_, sub_.view(), dim_s_, n, false);
  mark(cmd, "per_layer.proj_out");
  barrier(cmd);
  finish_sublayer(cmd, vk::Buffer{}, L.per_layer_post_norm, n);
}

void VulkanRunner::record_shared_ffn(vk::CommandBuffer& cmd, const vk::DeviceLayerWeights& L, uint32_t n) {
  const vk::DeviceFfn& f = L.shared;
  const uint64_t up_at = (f.gate_up_fused ? f.hidden : align4(f.hidden)) * kF;
  if (f.gate_up_fused) {
    matmul(cmd, f.w_gate_up, xn_.view(), dim_s_, gate_up_.view(), gate_up_s_, n, false);
  } else {
    matmul(cmd, f.w_gate, xn_.view(), dim_s_, gate_up_.view(), gate_up_s_, n, false);
    matmul(cmd, f.w_up, xn_.view(), dim_s_, gate_up_.view(up_at, VK_WHOLE_SIZE), gate_up_s_, n, false);
  }
  if (L.shared_gate_inp.rows > 0) matmul(cmd, L.shared_gate_inp, xn_.view(), dim_s_, shared_gate_.view(), 4, n, false);
  mark(cmd, "shared.gate_up");
  barrier(cmd);
  record_activation(cmd, f, gate_up_.view(), gate_up_.view(up_at, VK_WHOLE_SIZE), gate_up_s_, n);
  mark(cmd, "shared.activation");
  barrier(cmd);
  matmul(cmd, f.w_down, gate_up_.view(), gate_up_s_, shared_out_.view(), dim_s_, n, false);
  mark(cmd, "shared.down");
  barrier(cmd);
  if (L.post_norm_shared.valid()) {
    ops_->rmsnorm(cmd, shared_out_.view(), dim_s_, L.post_norm_shared.view(), shared_out_.view(), dim_s_, n,
                  config_.dim, config_.norm_eps);
    mark(cmd, "shared.post_norm");
    barrier(cmd);
  }
  if (L.shared_gate_inp.rows > 0) {  // Qwen3.5 MoE: times sigmoid(gate_inp · xn), one gate a token
    ops_->sigmoid_gate(cmd, shared_out_.view(), dim_s_, shared_gate_.view(), 4, n, config_.dim, true);
    mark(cmd, "shared.gate");
    barrier(cmd);
  }
}

// Routed experts, recorded without a host round trip: the router's logits are routed on the device
// (moe_route_f32: route_experts' choices and weights) and the (token, choice) pairs grouped by
// expert there (moe_plan_i32: plan_experts' groups, expert_plan.h), then every expert in use runs
// over the rows of the tokens that chose it, one mul_mat_id dispatch per matrix for all of them
// (its grid sized for the worst case: expert_plan_max_groups slots of one token tile each; those a
// step leaves empty exit at once), one per bias, one activation over all rows, and moe_combine_f32 adds the
// weighted outputs in the router's order to x (or, where the block is post-normed, to a zeroed sub_
// that finish_sublayer norms and adds). A shared block beside them runs first (it reads
// ffn_norm(x), which the experts' own pre-norm then replaces where the norms split) and is added
// after the routed sum.
void VulkanRunner::record_expert_ffn(vk::CommandBuffer& cmd, uint32_t l, uint32_t n) {
  const LlamaConfig& c = config_;
  const FfnSpec& spec = c.layers[l].ffn;
  const vk::DeviceLayerWeights& L = weights_->layers[l];
  ops_->rmsnorm(cmd, x_.view(), dim_s_, L.ffn_norm.view(), xn_.view(), dim_s_, n, c.dim, c.norm_eps);
  mark(cmd, "rmsnorm");
  barrier(cmd);
  if (L.shared.hidden > 0) record_shared_ffn(cmd, L, n);
  if (L.pre_norm_experts.valid()) {
    ops_->rmsnorm(cmd, x_.view(), dim_s_, L.pre_norm_experts.view(), xn_.view(), dim_s_, n, c.dim, c.norm_eps);
    mark(cmd, "rmsnorm.experts");
    barrier(cmd);
  }
  if (L.experts_on_host) {
    run_host_experts(cmd, l, n);
    return;
  }
  vk::BufferView router_in = xn_.view();
  if (L.router_in_weight.valid()) {
    ops_->rmsnorm(cmd, x_.view(), dim_s_, L.router_in_weight.view(), router_in_.view(), dim_s_, n, c.dim, c.norm_eps);
    mark(cmd, "rmsnorm.router");
    barrier(cmd);
    router_in = router_in_.view();
  }
  matmul(cmd, L.router, router_in, dim_s_, router_logits_.view(), router_s_, n, false);
  mark(cmd, "matmul.router");
  barrier(cmd);
  if (L.router_bias.valid()) {
    ops_->bias_add(cmd, router_logits_.view(), router_s_, L.router_bias.view(), n, spec.n_experts);
    mark(cmd, "bias.router");
    barrier(cmd);
  }
  const bool softmax_first = spec.routing.order == ExpertRouting::Order::kSoftmaxThenTopK;
  vk::record_moe_route(cmd, *kernels_,
                       vk::MoeRouteBindings{router_logits_.view(),
                                            L.expert_scale.valid() ? L.expert_scale.view() : router_logits_.view(),
                                            expert_ids_.view(), expert_weights_.view()},
                       vk::shader::MoeRouteParams{n, spec.n_experts, spec.n_used, router_s_, softmax_first ? 1u : 0u,
                                                  softmax_first ? 0u : 1u, spec.routing.normalize ? 1u : 0u,
                                                  L.expert_scale.valid() ? 1u : 0u});
  mark(cmd, "expert.route");
  barrier(cmd);
  const uint32_t rows = n * spec.n_used;
  const uint32_t max_groups = vk::expert_plan_max_groups(n, spec);
  vk::record_moe_plan(cmd, *kernels_,
                      vk::MoePlanBindings{expert_ids_.view(), expert_slots_.view(), expert_gather_.view(),
                                          expert_rows_.view(), expert_row_expert_.view()},
                      vk::shader::MoePlanParams{rows, spec.n_experts, spec.n_used, max_groups});
  mark(cmd, "expert.plan");
  barrier(cmd);

  // Each (token, choice)'s normed input at its row.
  ops_->gather_rows(cmd, xn_.view(), dim_s_, n, c.dim, expert_gather_.view(), rows, expert_in_.view(), dim_s_);
  mark(cmd, "expert.gather");
  barrier(cmd);
  const vk::DeviceFfn& f = L.ffn;
  // A slot has at most VKS_MOE_SLOT_ROWS rows: one token tile, so the grid's spare workgroups are
  // only the slots a step leaves empty. The rows family's matvec kernel sizes its tile to the rows.
  const vk::Ops::ExpertGroupTable groups{expert_slots_.view(), max_groups, std::min<uint32_t>(n, VKS_MOE_SLOT_ROWS),
                                         rows};
  const vk::WeightOp op = vk::WeightOp::kMatvec;
  const uint64_t up_at = (f.gate_up_fused ? f.hidden : align4(f.hidden)) * kF;
  const vk::BufferView gate = expert_gate_up_.view(), up = expert_gate_up_.view(up_at, VK_WHOLE_SIZE);
  if (f.gate_up_fused) {
    ops_->matmul_id(cmd, op, f.w_gate_up, 2 * f.hidden, groups, expert_in_.view(), dim_s_, gate, gate_up_s_,
                    swiglu_epilogue(f));
  } else {
    ops_->matmul_id(cmd, op, f.w_gate, f.hidden, groups, expert_in_.view(), dim_s_, gate, gate_up_s_);
    ops_->matmul_id(cmd, op, f.w_up, f.hidden, groups, expert_in_.view(), dim_s_, up, gate_up_s_);
  }
  mark(cmd, "expert.gate_up");
  barrier(cmd);
  const vk::BufferView row_expert = expert_row_expert_.view();
  if (L.b_gate.valid()) {  // gpt-oss: each expert's gate and up biases on its rows
    ops_->bias_add_rows(cmd, gate, gate_up_s_, L.b_gate.buffer.view(), static_cast<uint32_t>(L.b_gate.row_bytes / kF),
                        row_expert, rows, f.hidden);
    ops_->bias_add_rows(cmd, up, gate_up_s_, L.b_up.buffer.view(), static_cast<uint32_t>(L.b_up.row_bytes / kF),
                        row_expert, rows, f.hidden);
    mark(cmd, "expert.bias");
    barrier(cmd);
  }
  if (!swiglu_epilogue(f)) {
    record_activation(cmd, f, gate, up, gate_up_s_, rows);
    mark(cmd, "expert.activation");
    barrier(cmd);
  }
  ops_->matmul_id(cmd, op, f.w_down, c.dim, groups, expert_gate_up_.view(), gate_up_s_, expert_out_.view(), dim_s_);
  mark(cmd, "expert.down");
  barrier(cmd);
  if (L.b_down.valid()) {
    ops_->bias_add_rows(cmd, expert_out_.view(), dim_s_, L.b_down.buffer.view(),
                        static_cast<uint32_t>(L.b_down.row_bytes / kF), row_expert, rows, c.dim);
    mark(cmd, "expert.bias_down");
    barrier(cmd);
  }
  const vk::BufferView target = sublayer_out(L.post_ffn_norm);
  if (L.post_ffn_norm.valid()) {
    cmd.fill(sub_, 0, uint64_t{n} * dim_s_ * kF, 0);
    cmd.barrier(vk::Stage::kTransfer, vk::Stage::kCompute);
  }
  vk::record_moe_combine(cmd, *kernels_,
                         vk::MoeCombineBindings{target, expert_out_.view(), expert_rows_.view(), expert_weights_.view()},
                         vk::shader::MoeCombineParams{n, c.dim, spec.n_used, dim_s_, dim_s_});
  mark(cmd, "expert.combine");
  barrier(cmd);
  record_expert_tail(cmd, L, target, n);
}

void VulkanRunner::record_expert_tail(vk::CommandBuffer& cmd, const vk::DeviceLayerWeights& L, vk::BufferView target,
                                      uint32_t n) {
  const LlamaConfig& c = config_;
  if (L.post_norm_experts.valid()) {
    ops_->rmsnorm(cmd, target, dim_s_, L.post_norm_experts.view(), target, dim_s_, n, c.dim, c.norm_eps);
    mark(cmd, "expert.post_norm");
    barrier(cmd);
  }
  if (L.shared.hidden > 0) {
    ops_->add(cmd, target, shared_out_.view(), dim_s_, target, dim_s_, n, c.dim);
    mark(cmd, "shared.add");
    barrier(cmd);
  }
  finish_sublayer(cmd, vk::Buffer{}, L.post_ffn_norm, n);
}

// The step so far is submitted and waited for, the CPU runs the layer's experts over the rows of
// xn_ (HostExperts: router, routing and experts as the CPU backend runs them), and a new submission
// adds their sum where the device's combine would have (x_, or a zeroed sub_), then goes on.
void VulkanRunner::run_host_experts(vk::CommandBuffer& cmd, uint32_t l, uint32_t n) {
  const vk::DeviceLayerWeights& L = weights_->layers[l];
  const uint64_t bytes = uint64_t{n} * dim_s_ * kF;
  cmd.barrier(vk::Stage::kCompute, vk::Stage::kTransfer);
  cmd.copy(xn_, 0, host_xn_.host_side(), 0, bytes);
  const bool reads_x = config_.layers[l].ffn.router_input == RouterInput::kScaledNorm;
  if (reads_x) cmd.copy(x_, 0, host_x_.host_side(), 0, bytes);
  cmd.barrier(vk::Stage::kTransfer, vk::Stage::kHost);
  submit_and_wait(cmd);
  device_.invalidate(host_xn_.host_side());
  if (reads_x) device_.invalidate(host_x_.host_side());
  host_experts_->run(l, static_cast<const float*>(host_xn_.mapped()),
                     reads_x ? static_cast<const float*>(host_x_.mapped()) : nullptr, dim_s_, n,
                     static_cast<float*>(host_out_.mapped()));
  device_.flush(host_out_.host_side(), 0, VK_WHOLE_SIZE);
  cmd.begin();
  if (host_out_.host.valid()) {
    cmd.copy(host_out_.host, 0, host_out_.device, 0, bytes);
    cmd.barrier(vk::Stage::kTransfer, vk::Stage::kCompute);
  }
  cmd.barrier(vk::Stage::kHost, vk::Stage::kCompute);
  const vk::BufferView target = sublayer_out(L.post_ffn_norm);
  if (L.post_ffn_norm.valid()) {
    cmd.fill(sub_, 0, bytes, 0);
    cmd.barrier(vk::Stage::kTransfer, vk::Stage::kCompute);
  }
  ops_->add(cmd, target, host_out_.device.view(), dim_s_, target, dim_s_, n, config_.dim);
  mark(cmd, "expert.host");  // the CPU's time included: the stamps before and after straddle it
  barrier(cmd);
  record_expert_tail(cmd, L, target, n);
}

void VulkanRunner::submit_and_wait(vk::CommandBuffer& cmd) {
  cmd.end();
  submit_recorded(cmd);
}

void VulkanRunner::submit_recorded(const vk::CommandBuffer& cmd) {
  last_dispatches_ += cmd.dispatch_count();
  ++last_submits_;
  device_.submit(cmd, fence_);
  fence_.wait();
  fence_.reset();
}

// Final norm of the rows that produce logits (gathered into xo), logits, greedy ids.
void VulkanRunner::record_logits(vk::CommandBuffer& cmd, const StepInputs& in) {
  const LlamaConfig& c = config_;
  const uint32_t n_out = static_cast<uint32_t>(in.out_rows.size());
  if (n_out == 0) return;
  const uint64_t row = uint64_t(dim_s_) * kF;
  for (uint32_t i = 0; i < n_out;) {  // one rmsnorm per run of consecutive rows
    uint32_t j = i + 1;
    while (j < n_out && in.out_rows[j] == in.out_rows[j - 1] + 1) ++j;
    ops_->rmsnorm(cmd, x_.view(uint64_t(in.out_rows[i]) * row, (j - i) * row), dim_s_, weights_->output_norm.view(),
                  xo_.view(i * row, (j - i) * row), dim_s_, j - i, c.dim, c.norm_eps);
    i = j;
  }
  mark(cmd, "output_norm");
  barrier(cmd);
  matmul(cmd, weights_->output(), xo_.view(), dim_s_, logits_.device.view(), vocab_s_, n_out, false);
  mark(cmd, "matmul.logits");
  barrier(cmd);
  if (c.final_softcap > 0.0f) {
    ops_->softcap(cmd, logits_.device.view(), vocab_s_, n_out, c.vocab_size, c.final_softcap);
    mark(cmd, "softcap");
    barrier(cmd);
  }
  ops_->argmax(cmd, logits_.device.view(), vocab_s_, n_out, c.vocab_size, ids_.device.view());
  mark(cmd, "argmax");
}

// Embeddings: the final norm of every kHidden row, packed in hidden_ in the order of in.hidden_rows.
void VulkanRunner::record_hidden(vk::CommandBuffer& cmd, const StepInputs& in) {
  const LlamaConfig& c = config_;
  const uint32_t n = static_cast<uint32_t>(in.hidden_rows.size());
  if (n == 0) return;
  const uint64_t row = uint64_t(dim_s_) * kF;
  for (uint32_t i = 0; i < n;) {  // one rmsnorm per run of consecutive rows
    uint32_t j = i + 1;
    while (j < n && in.hidden_rows[j] == in.hidden_rows[j - 1] + 1) ++j;
    ops_->rmsnorm(cmd, x_.view(uint64_t(in.hidden_rows[i]) * row, (j - i) * row), dim_s_, weights_->output_norm.view(),
                  hidden_.device.view(i * row, (j - i) * row), dim_s_, j - i, c.dim, c.norm_eps);
    i = j;
  }
  mark(cmd, "hidden_norm");
}

void VulkanRunner::record_forward(vk::CommandBuffer& cmd, const StepInputs& in) {
  const uint32_t n = static_cast<uint32_t>(in.n_tokens);
  ops_->embed(cmd, weights_->token_embd, tokens_.device.view(), n, x_.view(), dim_s_);
  mark(cmd, "embed");
  barrier(cmd);
  if (config_.embedding_scale != 1.0f) {
    ops_->scale(cmd, x_.view(), dim_s_, n, config_.dim, config_.embedding_scale);
    mark(cmd, "embed.scale");
    barrier(cmd);
  }
  if (weights_->per_layer_model_proj.rows > 0) record_per_layer_inputs(cmd, n);
  for (uint32_t l = 0; l < config_.n_layers; ++l) record_layer(cmd, l, in);
  record_logits(cmd, in);
  record_hidden(cmd, in);
}

void VulkanRunner::record_readbacks(vk::CommandBuffer& cmd, const StepInputs& in) {
  const uint32_t n_out = static_cast<uint32_t>(in.out_rows.size());
  const uint32_t n_hidden = static_cast<uint32_t>(in.hidden_rows.size());
  const uint64_t hidden_bytes = uint64_t(n_hidden) * dim_s_ * kF;
  if (ids_.host.valid() && n_out > 0) {
    cmd.barrier(vk::Stage::kCompute, vk::Stage::kTransfer);
    cmd.copy(ids_.device, 0, ids_.host, 0, uint64_t(n_out) * 4);
    if (in.n_full > 0) cmd.copy(logits_.device, 0, logits_.host, 0, uint64_t(n_out) * vocab_s_ * kF);
    if (hidden_.host.valid() && n_hidden > 0) cmd.copy(hidden_.device, 0, hidden_.host, 0, hidden_bytes);
    cmd.barrier(vk::Stage::kTransfer, vk::Stage::kHost);
  } else if (hidden_.host.valid() && n_hidden > 0) {
    cmd.barrier(vk::Stage::kCompute, vk::Stage::kTransfer);
    cmd.copy(hidden_.device, 0, hidden_.host, 0, hidden_bytes);
    cmd.barrier(vk::Stage::kTransfer, vk::Stage::kHost);
    cmd.barrier(vk::Stage::kCompute, vk::Stage::kHost);  // ids written straight to mapped memory
  } else {
    cmd.barrier(vk::Stage::kCompute, vk::Stage::kHost);
  }
}

void VulkanRunner::record_step(vk::CommandBuffer& cmd, const StepInputs& in) {
  record_uploads(cmd, in);
  record_forward(cmd, in);
  record_readbacks(cmd, in);
}

void VulkanRunner::step(const StepBatch& batch, StepResult& out) {
  const auto host_start = std::chrono::steady_clock::now();
  pack_step_inputs(batch, limits_, inputs_);
  const StepInputs& in = inputs_;
  const uint32_t n_out = static_cast<uint32_t>(in.out_rows.size());
  const uint32_t n_hidden = static_cast<uint32_t>(in.hidden_rows.size());
  stage_inputs(in, batch);

  last_dispatches_ = 0;
  last_submits_ = 0;
  // Profiled steps time each op with queries of their own recording; host experts submit mid-step.
  const std::optional<vk::ReplayKey> key = replays_ && !profiler_ && !weights_->split.any_on_host()
                                               ? vk::replay_key(batch, in, attn_split_keys_)
                                               : std::nullopt;
  vk::StepReplays::Recording* replay = key ? &replays_->find_or_make(*key) : nullptr;
  last_replayed_ = replay != nullptr && replay->recorded;
  vk::CommandBuffer& cmd = replay != nullptr ? replay->cmd : cmd_;
  if (!last_replayed_) {
    cmd.begin(replay != nullptr ? vk::Reuse::kReplayed : vk::Reuse::kOnce);
    if (profiler_) profiler_->begin(cmd);
    record_step(cmd, in);
    cmd.end();
    if (replay != nullptr) {
      replay->recorded = true;
      ++replay_recordings_;
    }
  }
  // Steps whose experts run on the CPU submit mid-step: their record time includes those parts.
  last_record_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start).count();
  submit_recorded(cmd);
  if (profiler_) profiler_->collect(profile_ms_);

  out.argmax.assign(batch.seqs.size(), -1);
  out.verify_argmax.clear();
  out.logits.clear();
  out.hidden.clear();
  if (n_hidden > 0) {
    device_.invalidate(hidden_.host_side());
    const auto* rows = static_cast<const float*>(hidden_.mapped());
    out.hidden.reserve(size_t{n_hidden} * config_.dim);
    for (uint32_t k = 0; k < n_hidden; ++k) {
      const float* row = rows + size_t{k} * dim_s_;
      out.hidden.insert(out.hidden.end(), row, row + config_.dim);
    }
  }
  if (n_out == 0) return;
  device_.invalidate(ids_.host_side());
  const auto* ids = static_cast<const int32_t*>(ids_.mapped());
  for (uint32_t k = 0; k < n_out; ++k) {
    const SeqChunk& c = batch.seqs[static_cast<size_t>(in.out_seq[k])];
    if (in.out_rows[k] == c.token_offset + c.n_tokens - 1) {
      out.argmax[static_cast<size_t>(in.out_seq[k])] = ids[k];
    } else {
      out.verify_argmax.push_back(ids[k]);  // rows come in seq then token order
    }
  }
  if (in.n_full == 0) return;
  device_.invalidate(logits_.host_side());
  const auto* logits = static_cast<const float*>(logits_.mapped());
  const size_t vocab = config_.vocab_size;
  out.logits.reserve(static_cast<size_t>(in.n_full) * vocab);
  for (uint32_t k = 0; k < n_out; ++k) {
    if (batch.seqs[static_cast<size_t>(in.out_seq[k])].logits != LogitsMode::kFull) continue;
    const float* row = logits + size_t{k} * vocab_s_;
    out.logits.insert(out.logits.end(), row, row + vocab);
  }
}

}  // namespace vks
