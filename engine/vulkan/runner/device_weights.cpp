#include "engine/vulkan/runner/device_weights.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <vector>

#include "engine/common/error.h"
#include "engine/cpu/cpu_model.h"
#include "engine/cpu/reference_ops.h"

namespace vks::vk {
namespace {

uint64_t matrix_bytes(const DeviceMatrix& m) {
  uint64_t n = 0;
  for (const Buffer& b : m.storage.parts) n += b.size();
  return n;
}

bool stackable(std::span<const TensorRef* const> parts) {
  for (const TensorRef* t : parts) {
    if (t->type != parts.front()->type || t->cols != parts.front()->cols) return false;
  }
  return true;
}

// One input product's rows and the row of the step's q|k|v activation where they land.
struct RowPiece {
  TensorRef rows;
  uint32_t at = 0;
};

// What a layer's input products write, in row order (DeviceLayerWeights::qkv): Q, K, V; where
// attention's output is gated (AttentionSpec::output_gate), attn_q holds each head's query then its
// gate, so the queries go first, head by head, and the gates after V; a KV-sharing layer: Q only
// (and its gates, at the same place); a Gated DeltaNet layer: qkv, z, beta, alpha.
std::vector<RowPiece> input_rows(const LayerWeights& lw, const LayerSpec& spec, uint32_t n_heads) {
  std::vector<RowPiece> pieces;
  uint32_t at = 0;
  auto add = [&](const TensorRef& t) {
    pieces.push_back({t, at});
    at += static_cast<uint32_t>(t.rows);
  };
  if (spec.mixer == Mixer::kDeltaNet) {
    for (const TensorRef* t : {&lw.deltanet->qkv, &lw.deltanet->z, &lw.deltanet->beta, &lw.deltanet->alpha}) add(*t);
    return pieces;
  }
  const AttentionSpec& a = spec.attention;
  const uint32_t hd = a.head_dim;
  const bool gated = a.output_gate;
  for (uint32_t h = 0; h < (gated ? n_heads : 0); ++h) add(lw.wq.rows_slice(uint64_t{2 * h} * hd, hd));
  if (!gated) add(lw.wq);
  if (lw.wk.data != nullptr) {
    add(lw.wk);
    add(lw.wv);
  }
  at = n_heads * hd + 2 * a.kv_dim();
  for (uint32_t h = 0; h < (gated ? n_heads : 0); ++h) add(lw.wq.rows_slice(uint64_t{2 * h + 1} * hd, hd));
  return pieces;
}

// The input products, each run of pieces of one type and width landing on consecutive rows stacked
// into one matrix (one dispatch).
std::vector<DeviceLayerWeights::RowBlock> upload_input_rows(const Device& device, const std::vector<RowPiece>& pieces,
                                                            ThreadPool& pool) {
  std::vector<DeviceLayerWeights::RowBlock> blocks;
  for (size_t i = 0; i < pieces.size();) {
    const TensorRef& first = pieces[i].rows;
    std::vector<StackedSource> sources{{first.data, first.rows}};
    size_t end = i + 1;
    uint32_t next = pieces[i].at + static_cast<uint32_t>(first.rows);
    while (end < pieces.size() && pieces[end].at == next && pieces[end].rows.type == first.type &&
           pieces[end].rows.cols == first.cols) {
      sources.push_back({pieces[end].rows.data, pieces[end].rows.rows});
      next += static_cast<uint32_t>(pieces[end].rows.rows);
      ++end;
    }
    for (const StackedSource& src : sources) {
      if (src.data == nullptr) throw Error(ErrorCode::kInvalidArgument, "upload_matrix: tensor " + first.name + " has no data");
    }
    blocks.push_back({end == i + 1 ? upload_matrix(device, first, 0, &pool)
                                   : upload_stacked_matrix(device, first.type, first.cols, sources, 0, &pool),
                      pieces[i].at});
    i = end;
  }
  return blocks;
}

// bq | bk | bv as one f32 vector (a part that is absent is zero), or an invalid Buffer when the
// layer has no bias at all.
Buffer upload_qkv_bias(const Device& device, const LayerWeights& lw, uint64_t q_dim, uint64_t kv_dim) {
  if (!lw.bq && !lw.bk && !lw.bv) return Buffer();
  std::vector<float> bias(q_dim + 2 * kv_dim, 0.0f);
  uint64_t at = 0;
  for (const auto* part : {&lw.bq, &lw.bk, &lw.bv}) {
    const uint64_t n = part == &lw.bq ? q_dim : kv_dim;
    if (part->has_value()) {
      const TensorRef& t = **part;
      if (t.rows * t.cols != n) throw Error(ErrorCode::kCorrupt, "tensor " + t.name + ": bias has the wrong length");
      dequantize_row(t.type, t.data, bias.data() + at, n);
    }
    at += n;
  }
  Buffer b = device.create_buffer(bias.size() * sizeof(float), BufferKind::kStorage);
  device.upload(b, 0, bias.data(), bias.size() * sizeof(float));
  return b;
}

Buffer upload_floats(const Device& device, const std::vector<float>& v) {
  Buffer b = device.create_buffer(std::max<size_t>(v.size(), 1) * sizeof(float), BufferKind::kStorage);
  if (!v.empty()) device.upload(b, 0, v.data(), v.size() * sizeof(float));
  return b;
}

// Stacked per-expert biases (rows x cols F32), each row padded to the offset alignment.
DeviceLayerWeights::BiasRows upload_bias_rows(const Device& device, const TensorRef& t) {
  const uint64_t align = std::max<uint64_t>(device.info().min_storage_buffer_offset_alignment, 16);
  DeviceLayerWeights::BiasRows rows;
  rows.row_bytes = (t.cols * sizeof(float) + align - 1) / align * align;
  std::vector<float> padded(t.rows * rows.row_bytes / sizeof(float), 0.0f);
  for (uint64_t r = 0; r < t.rows; ++r) dequantize_tensor_row(t, r, &padded[r * rows.row_bytes / sizeof(float)]);
  rows.buffer = upload_floats(device, padded);
  return rows;
}

// Whether a block's gate and up matrices upload as one (the up half of a fused gate|up row must
// start 16-byte aligned for the swiglu kernel's view).
bool gate_up_stacks(const TensorRef& gate, const TensorRef& up) {
  const std::array<const TensorRef*, 2> parts{&gate, &up};
  return stackable(parts) && gate.rows % 4 == 0;
}

// The most bytes a part of a stack of blocks of block_rows rows may take so that no block straddles
// two parts (0: the device's limit, for a single block). Throws when one block cannot fit a binding.
uint64_t whole_block_part_bytes(const Device& device, const TensorRef& t, uint64_t block_rows, uint32_t n_blocks) {
  if (n_blocks <= 1) return 0;
  const uint64_t block = device_matrix_part_bytes(t.type, block_rows, t.cols);
  const uint64_t limit = device.max_texel_binding_bytes();
  if (block > limit) {
    throw Error(ErrorCode::kUnsupported, "tensor " + t.name + ": one expert's " + std::to_string(block >> 20) +
                                             " MiB exceed the " + std::to_string(limit >> 20) + " MiB a binding of " +
                                             device.info().name + " holds; run it on the CPU (--cpu)");
  }
  return limit / block * block;
}

// A feed-forward block of n_experts experts (1: dense), each projection's experts stacked by rows
// (gate and up of each expert fused into one gate|up block where their types allow).
DeviceFfn upload_ffn(const Device& device, const TensorRef& gate, const TensorRef& up, const TensorRef& down,
                     uint32_t n_experts, uint32_t dim, ThreadPool& pool) {
  DeviceFfn f;
  f.n_experts = n_experts;
  f.hidden = static_cast<uint32_t>(gate.rows / n_experts);
  const TensorRef gate0 = expert_matrix(gate, 0, f.hidden), up0 = expert_matrix(up, 0, f.hidden);
  f.gate_up_fused = gate_up_stacks(gate0, up0);
  if (f.gate_up_fused) {
    std::vector<StackedSource> sources;
    for (uint32_t e = 0; e < n_experts; ++e) {
      for (const TensorRef* t : {&gate, &up}) {
        const TensorRef part = expert_matrix(*t, e, f.hidden);
        if (part.data == nullptr) throw Error(ErrorCode::kInvalidArgument, "upload_matrix: tensor " + t->name + " has no data");
        sources.push_back(StackedSource{part.data, part.rows});
      }
    }
    try {
      f.w_gate_up = upload_stacked_matrix(device, gate.type, gate.cols, sources,
                                          whole_block_part_bytes(device, gate, 2ull * f.hidden, n_experts), &pool);
    } catch (const Error& e) {
      throw Error(e.code(), "tensor " + gate.name + ": " + e.what());
    }
  } else {
    f.w_gate = upload_matrix(device, gate, whole_block_part_bytes(device, gate, f.hidden, n_experts), &pool);
    f.w_up = upload_matrix(device, up, whole_block_part_bytes(device, up, f.hidden, n_experts), &pool);
  }
  f.w_down = upload_matrix(device, down, whole_block_part_bytes(device, down, dim, n_experts), &pool);
  return f;
}

// The refusal of a model whose weights need more device buffers than the device allows.
void check_allocations(const Device& device, uint64_t buffers) {
  const DeviceInfo& info = device.info();
  if (info.max_memory_allocations != 0 && buffers + 1024 > info.max_memory_allocations) {
    throw Error(ErrorCode::kUnsupported, "the model's weights need " + std::to_string(buffers) + " device buffers and " +
                                             info.name + " allows " + std::to_string(info.max_memory_allocations) +
                                             " allocations; run it on the CPU (--cpu)");
  }
}

}  // namespace

WeightFootprint weight_footprint(const Device& device, const LlamaModel& model) {
  const LlamaConfig& c = model.config();
  const LlamaWeights& w = model.weights();
  WeightFootprint f;
  f.expert_bytes.assign(w.layers.size(), 0);
  f.expert_buffers.assign(w.layers.size(), 0);
  auto add = [&](const TensorRef& t, uint64_t& bytes, uint64_t& buffers) {
    const uint64_t b = device_matrix_part_bytes(t.type, t.rows, t.cols);
    bytes += b;
    buffers += 1 + b / std::max<uint64_t>(device.max_texel_binding_bytes(), 1);
  };
  auto fixed = [&](const TensorRef& t) { add(t, f.fixed_bytes, f.fixed_buffers); };
  fixed(w.token_embd);
  if (w.output.data != w.token_embd.data) fixed(w.output);
  if (w.per_layer_inputs) {
    fixed(w.per_layer_inputs->token_embd);
    fixed(w.per_layer_inputs->model_proj);
  }
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    for (const TensorRef* t : {&lw.wq, &lw.wk, &lw.wv, &lw.wo}) {
      if (t->data != nullptr) fixed(*t);
    }
    if (lw.deltanet) {
      const DeltaNetWeights& d = *lw.deltanet;
      for (const TensorRef* t : {&d.qkv, &d.z, &d.beta, &d.alpha, &d.out}) fixed(*t);
    }
    if (lw.router) fixed(*lw.router);
    if (lw.shared) {
      for (const TensorRef* t : {&lw.shared->gate, &lw.shared->up, &lw.shared->down}) fixed(*t);
    }
    if (lw.per_layer_input) {
      fixed(lw.per_layer_input->gate);
      fixed(lw.per_layer_input->proj);
    }
    // Every expert of a projection in one stack (gate and up in one where they fuse): a routed
    // layer's stacks are what may stay on the host.
    const FfnSpec& ffn = c.layers[l].ffn;
    const bool routed = ffn.routed() && lw.router;
    uint64_t& bytes = routed ? f.expert_bytes[l] : f.fixed_bytes;
    uint64_t& buffers = routed ? f.expert_buffers[l] : f.fixed_buffers;
    add(lw.w_gate, bytes, buffers);
    add(lw.w_up, bytes, buffers);
    add(lw.w_down, bytes, buffers);
    if (gate_up_stacks(expert_matrix(lw.w_gate, 0, ffn.hidden), expert_matrix(lw.w_up, 0, ffn.hidden))) --buffers;
  }
  return f;
}

ExpertSplit plan_weights(const Device& device, const LlamaModel& model, int32_t cpu_expert_layers, uint64_t budget) {
  const DeviceInfo& info = device.info();
  // Before any upload: a model that cannot fit is refused with its sizes instead of failing halfway.
  const ExpertSplit split = split_experts(weight_footprint(device, model), cpu_expert_layers,
                                          budget != 0 ? budget : info.device_local_bytes, info.name);
  check_allocations(device, split.device_buffers);
  return split;
}

std::unique_ptr<DeviceWeights> upload_weights(const Device& device, const LlamaModel& model, int32_t cpu_expert_layers,
                                              uint64_t budget) {
  auto dw = std::make_unique<DeviceWeights>();
  dw->split = plan_weights(device, model, cpu_expert_layers, budget);
  if (dw->split.expert_layers > 0) spdlog::info("vulkan: {}", describe_split(dw->split));
  const LlamaWeights& w = model.weights();
  ThreadPool pool;  // converts large matrices' rows in parallel (device_matrix.h)
  dw->token_embd = upload_matrix(device, w.token_embd, 0, &pool);
  dw->bytes += matrix_bytes(dw->token_embd);
  const std::vector<float> divisors = w.rope_freqs ? dequantize_vector(*w.rope_freqs) : std::vector<float>();
  std::vector<std::vector<float>> rope_tables;  // host copies of dw->rope_tables, to find a layer's
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    DeviceLayerWeights& d = dw->layers.emplace_back();
    d.attn_norm = upload_vector_f32(device, lw.attn_norm);
    const LayerSpec& spec = model.config().layers[l];
    d.qkv = upload_input_rows(device, input_rows(lw, spec, model.config().n_heads), pool);
    for (const DeviceLayerWeights::RowBlock& b : d.qkv) dw->bytes += matrix_bytes(b.matrix);
    d.wo = upload_matrix(device, spec.mixer == Mixer::kDeltaNet ? lw.deltanet->out : lw.wo, 0, &pool);
    if (lw.deltanet) {
      d.conv = upload_vector_f32(device, lw.deltanet->conv);
      d.dt_bias = upload_vector_f32(device, lw.deltanet->dt_bias);
      d.ssm_a = upload_vector_f32(device, lw.deltanet->a);
      d.ssm_norm = upload_vector_f32(device, lw.deltanet->norm);
    }
    d.ffn_norm = upload_vector_f32(device, lw.ffn_norm);
    const FfnSpec& ffn = model.config().layers[l].ffn;
    d.experts_on_host = dw->split.on_host[l];
    if (d.experts_on_host) {  // read from the mmapped file by the CPU (host_experts.h)
      d.ffn.n_experts = ffn.n_experts;
      d.ffn.hidden = ffn.hidden;
    } else {
      d.ffn = upload_ffn(device, lw.w_gate, lw.w_up, lw.w_down, ffn.n_experts, model.config().dim, pool);
    }
    d.ffn.activation = ffn.activation;
    d.ffn.biased = lw.b_gate.has_value();
    dw->bytes += matrix_bytes(d.ffn.w_gate_up) + matrix_bytes(d.ffn.w_gate) + matrix_bytes(d.ffn.w_up) +
                 matrix_bytes(d.ffn.w_down);
    if (lw.router) {
      d.router = upload_matrix(device, *lw.router, 0, &pool);
      dw->bytes += matrix_bytes(d.router);
    }
    if (lw.shared) {
      d.shared = upload_ffn(device, lw.shared->gate, lw.shared->up, lw.shared->down, 1, model.config().dim, pool);
      d.shared.activation = ffn.activation;
      dw->bytes += matrix_bytes(d.shared.w_gate_up) + matrix_bytes(d.shared.w_gate) + matrix_bytes(d.shared.w_up) +
                   matrix_bytes(d.shared.w_down);
      if (lw.shared->gate_inp) d.shared_gate_inp = upload_matrix(device, *lw.shared->gate_inp, 0, &pool);
    }
    if (lw.split_norms) {
      d.post_norm_shared = upload_vector_f32(device, lw.split_norms->post_shared);
      d.pre_norm_experts = upload_vector_f32(device, lw.split_norms->pre_experts);
      d.post_norm_experts = upload_vector_f32(device, lw.split_norms->post_experts);
    }
    if (lw.router_scale) d.router_in_weight = upload_floats(device, scaled_norm_router_weight(*lw.router_scale, model.config().dim));
    if (lw.expert_scale) d.expert_scale = upload_floats(device, dequantize_vector(*lw.expert_scale));
    if (lw.per_layer_input) {
      d.per_layer_gate = upload_matrix(device, lw.per_layer_input->gate, 0, &pool);
      d.per_layer_proj = upload_matrix(device, lw.per_layer_input->proj, 0, &pool);
      d.per_layer_post_norm = upload_vector_f32(device, lw.per_layer_input->post_norm);
      dw->bytes += matrix_bytes(d.per_layer_gate) + matrix_bytes(d.per_layer_proj);
    }
    const AttentionSpec& attention = model.config().layers[l].attention;
    d.bqkv = upload_qkv_bias(device, lw, uint64_t{model.config().n_heads} * attention.head_dim, attention.kv_dim());
    if (attention.value_norm && !attention.shares_kv()) {
      d.value_norm = upload_floats(device, std::vector<float>(attention.head_dim, 1.0f));
    }
    if (lw.output_scale) d.output_scale = dequantize_vector(*lw.output_scale).front();
    if (lw.attn_q_norm) d.q_norm = upload_vector_f32(device, *lw.attn_q_norm);
    if (lw.attn_k_norm) d.k_norm = upload_vector_f32(device, *lw.attn_k_norm);
    if (lw.bo) d.bo = upload_vector_f32(device, *lw.bo);
    if (lw.attn_sinks) d.sinks = upload_vector_f32(device, *lw.attn_sinks);
    if (lw.post_attn_norm) d.post_attn_norm = upload_vector_f32(device, *lw.post_attn_norm);
    if (lw.post_ffn_norm) d.post_ffn_norm = upload_vector_f32(device, *lw.post_ffn_norm);
    if (lw.router_bias) d.router_bias = upload_vector_f32(device, *lw.router_bias);
    if (!d.experts_on_host) {
      if (lw.b_gate) d.b_gate = upload_bias_rows(device, *lw.b_gate);
      if (lw.b_up) d.b_up = upload_bias_rows(device, *lw.b_up);
      if (lw.b_down) d.b_down = upload_bias_rows(device, *lw.b_down);
    }
    const ref::RopeParams rope =
        ref::rope_params(model.config(), model.config().layers[l].attention, divisors.empty() ? nullptr : divisors.data());
    // The layer's angle table (from its base and the rope_freqs.weight divisors, whose length the
    // loader checked), uploaded once however many layers share it.
    const std::vector<float> freqs = ref::rope_frequencies(rope);
    const auto known = std::find(rope_tables.begin(), rope_tables.end(), freqs);
    d.rope_table = static_cast<uint32_t>(known - rope_tables.begin());
    if (known == rope_tables.end()) {
      rope_tables.push_back(freqs);
      dw->rope_tables.push_back(upload_floats(device, freqs));
    }
    d.rope_angle_scale = ref::rope_angle_scale(rope);
    d.rope_mscale_extra = rope.mscale_extra;
    dw->bytes += matrix_bytes(d.wo);
  }
  if (w.per_layer_inputs) {
    dw->per_layer_token_embd = upload_matrix(device, w.per_layer_inputs->token_embd, 0, &pool);
    dw->per_layer_model_proj = upload_matrix(device, w.per_layer_inputs->model_proj, 0, &pool);
    dw->per_layer_proj_norm = upload_vector_f32(device, w.per_layer_inputs->proj_norm);
    dw->bytes += matrix_bytes(dw->per_layer_token_embd) + matrix_bytes(dw->per_layer_model_proj);
  }
  dw->output_norm = upload_vector_f32(device, w.output_norm);
  dw->tied = model.config().tied_embeddings || w.output.data == w.token_embd.data;
  if (!dw->tied) {
    dw->output_own = upload_matrix(device, w.output, 0, &pool);
    dw->bytes += matrix_bytes(dw->output_own);
  }
  spdlog::info("vulkan: uploaded {:.1f} MiB of weights ({} layers{})", static_cast<double>(dw->bytes) / (1 << 20),
               dw->layers.size(), dw->tied ? ", tied output" : "");
  return dw;
}

}  // namespace vks::vk
