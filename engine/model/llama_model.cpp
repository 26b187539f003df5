#include "engine/model/llama_model.h"

#include <cmath>
#include <set>
#include <string>

#include "engine/common/error.h"

namespace vks {
namespace {

std::string shape_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

bool is_matrix_type(GgmlType t) {
  const auto traits = ggml_type_traits(static_cast<uint32_t>(t));
  return traits && traits->supported;
}

// Looks tensors up by name and checks them against the hyperparameters, remembering which ones it
// used so that unexpected extras can be reported.
class TensorBinder {
 public:
  TensorBinder(const gguf::GgufFile& file, const LlamaConfig& config) : file_(file), config_(config) {}

  // A weight vector of `n` F32 values (norm weights).
  TensorRef vector(const std::string& name, uint64_t n) {
    const gguf::TensorInfo& t = require(name);
    check_shape(t, {n});
    if (t.type != GgmlType::kF32) {
      throw Error(ErrorCode::kUnsupported, "tensor '" + name + "' has type " + std::string(ggml_type_name(t.type)) +
                                               "; vkstream expects norm weights and biases in f32 (as llama.cpp's "
                                               "converter writes them); re-convert or re-quantize the model");
    }
    return make_ref(t, 1, n);
  }

  // A vector the architecture may (kOptional), must (kRequired) or must not (kAbsent: left for
  // reject_unexpected to report) have.
  std::optional<TensorRef> optional_vector(const std::string& name, uint64_t n, TensorRule rule) {
    if (rule == TensorRule::kAbsent) return std::nullopt;
    if (rule == TensorRule::kOptional && file_.find_tensor(name) == nullptr) return std::nullopt;
    return vector(name, n);
  }

  // `count` F32 vectors of `n` values stacked (ggml dims [n, count]: one bias per expert), as a
  // count x n matrix.
  TensorRef vector_stack(const std::string& name, uint64_t n, uint64_t count) {
    const gguf::TensorInfo& t = require(name);
    check_shape(t, {n, count});
    if (t.type != GgmlType::kF32) {
      throw Error(ErrorCode::kUnsupported, "tensor '" + name + "' has type " + std::string(ggml_type_name(t.type)) +
                                               "; vkstream expects biases in f32");
    }
    return make_ref(t, count, n);
  }

  // A matrix of `rows` x `cols` (ggml dims [cols, rows]).
  TensorRef matrix(const std::string& name, uint64_t rows, uint64_t cols) {
    const gguf::TensorInfo& t = require(name);
    return matrix_from(t, rows, cols);
  }

  // A 3-D stack of `n` matrices of `rows` x `cols` (ggml dims [cols, rows, n]: experts), as one
  // matrix of n * rows rows.
  TensorRef stacked(const std::string& name, uint64_t rows, uint64_t cols, uint64_t n) {
    const gguf::TensorInfo& t = require(name);
    check_shape(t, {cols, rows, n});
    return matrix_from(t, n * rows, cols, true);
  }

  std::optional<TensorRef> optional_matrix(const std::string& name, uint64_t rows, uint64_t cols) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (t == nullptr) return std::nullopt;
    used_.insert(name);
    return matrix_from(*t, rows, cols);
  }

  void ignore(const std::string& name) { used_.insert(name); }

  void reject_unexpected() const {
    std::string extras;
    size_t n_extra = 0;
    for (const gguf::TensorInfo& t : file_.tensors()) {
      if (used_.count(t.name) != 0) continue;
      if (n_extra++ < 5) extras += (extras.empty() ? "'" : ", '") + t.name + "'";
    }
    if (n_extra != 0) {
      throw Error(ErrorCode::kCorrupt, std::to_string(n_extra) + " tensor(s) not used by a " +
                                           std::to_string(config_.n_layers) + "-layer " + config_.architecture +
                                           " model: " + extras + "; the file's tensors do not match its " +
                                           config_.architecture + ".block_count or architecture");
    }
  }

 private:
  const gguf::TensorInfo& require(const std::string& name) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (t == nullptr) {
      reject_unknown_layout(name);
      throw Error(ErrorCode::kCorrupt, "tensor '" + name + "' is missing (the file has " +
                                           std::to_string(file_.tensors().size()) +
                                           " tensors); the model file is incomplete or not a llama model: "
                                           "re-download or re-convert it");
    }
    used_.insert(name);
    return *t;
  }

  TensorRef matrix_from(const gguf::TensorInfo& t, uint64_t rows, uint64_t cols, bool shape_checked = false) {
    if (!shape_checked) check_shape(t, {cols, rows});
    if (!is_matrix_type(t.type)) {
      throw Error(ErrorCode::kUnsupported,
                  "tensor '" + t.name + "' has type " + std::string(ggml_type_name(t.type)) +
                      ", which vkstream does not support (supported: " + supported_ggml_type_names() +
                      "); use a model in one of those (e.g. llama-quantize in.gguf out.gguf Q4_K_M)");
    }
    return make_ref(t, rows, cols);
  }

  void check_shape(const gguf::TensorInfo& t, const std::vector<uint64_t>& expected) const {
    // Trailing dimensions of 1 are the same shape in ggml.
    std::vector<uint64_t> dims = t.dims;
    while (dims.size() > expected.size() && dims.back() == 1) dims.pop_back();
    if (dims != expected) {
      throw Error(ErrorCode::kCorrupt,
                  "tensor '" + t.name + "' has shape " + shape_string(t.dims) + ", expected " +
                      shape_string(expected) + " from the hyperparameters (embedding_length " +
                      std::to_string(config_.dim) + ", head_count " + std::to_string(config_.n_heads) +
                      ", head_count_kv " + std::to_string(config_.n_kv_heads) + ", feed_forward_length " +
                      std::to_string(config_.hidden_dim) + ", vocab " + std::to_string(config_.vocab_size) +
                      "); the file's metadata and tensors disagree: re-convert the model");
    }
  }

  TensorRef make_ref(const gguf::TensorInfo& t, uint64_t rows, uint64_t cols) const {
    const std::span<const uint8_t> data = file_.tensor_data(t);
    TensorRef ref;
    ref.name = t.name;
    ref.type = t.type;
    ref.rows = rows;
    ref.cols = cols;
    ref.data = data.data();
    ref.nbytes = data.size();
    return ref;
  }

  // A tensor is missing: when the same block holds tensors of a layout vkstream does not know
  // (another attention, other experts), the file is fine and this build is what lacks: say so
  // instead of calling the file incomplete.
  void reject_unknown_layout(const std::string& missing) const {
    static const std::set<std::string> kKnown = {
        "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_qkv.weight",
        "attn_output.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_q_norm.weight",
        "attn_k_norm.weight", "attn_rot_embd", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight",
        "ffn_down.weight", "ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight",
        "ffn_down_exps.weight", "attn_output.bias", "attn_sinks.weight", "post_attention_norm.weight",
        "post_ffw_norm.weight", "ffn_gate_inp.bias", "ffn_gate_exps.bias", "ffn_up_exps.bias", "ffn_down_exps.bias",
        "layer_output_scale.weight", "attn_gate.weight", "ssm_conv1d.weight", "ssm_dt.bias", "ssm_a",
        "ssm_beta.weight", "ssm_alpha.weight", "ssm_norm.weight", "ssm_out.weight", "ffn_gate_inp_shexp.weight",
        "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight", "ffn_gate_inp.scale",
        "ffn_down_exps.scale", "pre_ffw_norm_2.weight", "post_ffw_norm_1.weight", "post_ffw_norm_2.weight",
        "inp_gate.weight", "proj.weight", "post_norm.weight"};
    const size_t dot = missing.find('.', 4);
    if (missing.rfind("blk.", 0) != 0 || dot == std::string::npos) return;
    const std::string block = missing.substr(0, dot + 1);
    std::string unknown;
    for (const gguf::TensorInfo& t : file_.tensors()) {
      if (t.name.rfind(block, 0) != 0 || kKnown.count(t.name.substr(block.size())) != 0) continue;
      unknown += (unknown.empty() ? "'" : "', '") + t.name;
    }
    if (unknown.empty()) return;
    throw Error(ErrorCode::kUnsupported, "this " + config_.architecture + " model's layout is not supported: it has " +
                                             unknown + "' where vkstream expects '" + missing +
                                             "' (the file is likely fine; this build does not run that layout)");
  }

  const gguf::GgufFile& file_;
  const LlamaConfig& config_;
  std::set<std::string> used_;
};

// A Gated DeltaNet layer's tensors, shaped by its spec.
DeltaNetWeights bind_deltanet(TensorBinder& bind, const std::string& p, uint64_t dim, const DeltaNetSpec& d) {
  DeltaNetWeights w;
  w.qkv = bind.matrix(p + "attn_qkv.weight", d.conv_channels(), dim);
  w.z = bind.matrix(p + "attn_gate.weight", d.v_dim(), dim);
  w.beta = bind.matrix(p + "ssm_beta.weight", d.n_v_heads, dim);
  w.alpha = bind.matrix(p + "ssm_alpha.weight", d.n_v_heads, dim);
  w.out = bind.matrix(p + "ssm_out.weight", dim, d.v_dim());
  w.conv = bind.vector_stack(p + "ssm_conv1d.weight", d.conv_kernel, d.conv_channels());
  w.dt_bias = bind.vector(p + "ssm_dt.bias", d.n_v_heads);
  w.a = bind.vector(p + "ssm_a", d.n_v_heads);
  w.norm = bind.vector(p + "ssm_norm.weight", d.head_dim);
  return w;
}

}  // namespace

const uint8_t* TensorRef::row(uint64_t r) const { return data + r * ggml_row_size(type, cols); }

TensorRef TensorRef::rows_slice(uint64_t first, uint64_t n) const {
  if (first + n > rows) {
    throw Error(ErrorCode::kInvalidArgument, "rows " + std::to_string(first) + ".." + std::to_string(first + n) +
                                                 " of tensor '" + name + "' are out of range (" + std::to_string(rows) +
                                                 " rows)");
  }
  if (layout == WeightLayout::kRows16 && (first % kRows16Group != 0 || n % kRows16Group != 0)) {
    throw Error(ErrorCode::kInvalidArgument, "rows " + std::to_string(first) + ".." + std::to_string(first + n) +
                                                 " of tensor '" + name + "' do not start and end at a group of " +
                                                 std::to_string(kRows16Group) + " rows (the CPU runner's packed copy)");
  }
  TensorRef s = *this;
  s.rows = n;
  s.data = row(first);
  s.nbytes = n * ggml_row_size(type, cols);
  return s;
}

LlamaModel::LlamaModel(gguf::GgufFile file, LlamaConfig config) : file_(std::move(file)), config_(std::move(config)) {}

std::unique_ptr<LlamaModel> LlamaModel::load(const std::string& path) {
  gguf::GgufFile file = gguf::GgufFile::open(path);
  try {
    return from_file(std::move(file));
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

std::unique_ptr<LlamaModel> LlamaModel::from_file(gguf::GgufFile file) {
  LlamaConfig config = LlamaConfig::from_gguf(file);
  std::unique_ptr<LlamaModel> model(new LlamaModel(std::move(file), std::move(config)));
  const LlamaConfig& c = model->config_;
  if (model->file_.tensors().empty()) {
    throw Error(ErrorCode::kUnsupported, "the file has no weights (a vocabulary-only GGUF): it can tokenize "
                                         "(vkstream tokenize) but not generate");
  }
  if (c.vocab_size == 0) {
    throw Error(ErrorCode::kCorrupt, "tensor 'token_embd.weight' is missing or not a matrix; the file has no "
                                     "token embeddings");
  }
  TensorBinder bind(model->file_, c);
  const ArchitectureInfo& arch = architecture_info(c.arch);
  LlamaWeights& w = model->weights_;
  w.token_embd = bind.matrix("token_embd.weight", c.vocab_size, c.dim);
  w.layers.resize(c.n_layers);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    const FfnSpec& ffn = c.layers[l].ffn;
    AttentionSpec& attention = model->config_.layers[l].attention;
    const uint64_t q_dim = uint64_t{c.n_heads} * attention.head_dim, kv_dim = attention.kv_dim();
    const bool fused = arch.projections == ProjectionLayout::kFused;
    const bool deltanet = c.layers[l].mixer == Mixer::kDeltaNet;
    L.attn_norm = bind.vector(p + "attn_norm.weight", c.dim);
    if (deltanet) {
      L.deltanet = bind_deltanet(bind, p, c.dim, c.layers[l].deltanet);
    } else if (fused) {  // Q, K, V as row ranges of one matrix
      const TensorRef qkv = bind.matrix(p + "attn_qkv.weight", q_dim + 2 * kv_dim, c.dim);
      L.wq = qkv.rows_slice(0, q_dim);
      L.wk = qkv.rows_slice(q_dim, kv_dim);
      L.wv = qkv.rows_slice(q_dim + kv_dim, kv_dim);
    } else if (attention.shares_kv()) {  // Gemma 4: a query of its own over another layer's cache
      L.wq = bind.matrix(p + "attn_q.weight", q_dim, c.dim);
    } else {
      L.wq = bind.matrix(p + "attn_q.weight", attention.output_gate ? 2 * q_dim : q_dim, c.dim);
      L.wk = bind.matrix(p + "attn_k.weight", kv_dim, c.dim);
      // Gemma 4's global layers have no attn_v: their V is the K projection.
      const bool has_v = arch.attn_v == TensorRule::kRequired || model->file_.find_tensor(p + "attn_v.weight") != nullptr;
      attention.value_from_key = !has_v;
      L.wv = has_v ? bind.matrix(p + "attn_v.weight", kv_dim, c.dim) : L.wk;
    }
    if (!deltanet) L.wo = bind.matrix(p + "attn_output.weight", c.dim, q_dim);
    L.ffn_norm = bind.vector(p + std::string(arch.ffn_norm) + ".weight", c.dim);
    if (ffn.routed()) {
      L.router = bind.matrix(p + "ffn_gate_inp.weight", ffn.n_experts, c.dim);
      L.w_gate = bind.stacked(p + "ffn_gate_exps.weight", ffn.hidden, c.dim, ffn.n_experts);
      L.w_up = bind.stacked(p + "ffn_up_exps.weight", ffn.hidden, c.dim, ffn.n_experts);
      L.w_down = bind.stacked(p + "ffn_down_exps.weight", c.dim, ffn.hidden, ffn.n_experts);
    } else if (fused) {  // gate rows then up rows in ffn_up
      const TensorRef gate_up = bind.matrix(p + "ffn_up.weight", 2 * uint64_t{ffn.hidden}, c.dim);
      L.w_gate = gate_up.rows_slice(0, ffn.hidden);
      L.w_up = gate_up.rows_slice(ffn.hidden, ffn.hidden);
      L.w_down = bind.matrix(p + "ffn_down.weight", c.dim, ffn.hidden);
    } else {
      L.w_gate = bind.matrix(p + "ffn_gate.weight", ffn.hidden, c.dim);
      L.w_up = bind.matrix(p + "ffn_up.weight", ffn.hidden, c.dim);
      L.w_down = bind.matrix(p + "ffn_down.weight", c.dim, ffn.hidden);
    }
    bind.ignore(p + "attn_rot_embd");  // precomputed rotary tables of old conversions; unused
    L.bq = bind.optional_vector(p + "attn_q.bias", q_dim, arch.qkv_bias);
    L.bk = bind.optional_vector(p + "attn_k.bias", kv_dim, arch.qkv_bias);
    L.bv = bind.optional_vector(p + "attn_v.bias", kv_dim, arch.qkv_bias);
    const TensorRule qk_norm = deltanet ? TensorRule::kAbsent : arch.qk_norm;
    L.attn_q_norm = bind.optional_vector(p + "attn_q_norm.weight", attention.head_dim, qk_norm);
    L.attn_k_norm = bind.optional_vector(p + "attn_k_norm.weight", attention.head_dim,
                                         attention.shares_kv() ? TensorRule::kAbsent : qk_norm);
    if (c.per_layer_input_dim > 0) {
      L.per_layer_input = PerLayerInputWeights{bind.matrix(p + "inp_gate.weight", c.per_layer_input_dim, c.dim),
                                               bind.matrix(p + "proj.weight", c.dim, c.per_layer_input_dim),
                                               bind.vector(p + "post_norm.weight", c.dim)};
    }
    if (ffn.has_shared()) {
      // Gemma 4's shared block is its dense MLP, under the dense names.
      const std::string suffix = ffn.split_norms ? ".weight" : "_shexp.weight";
      L.shared = SharedExpertWeights{bind.matrix(p + "ffn_gate" + suffix, ffn.shared_hidden, c.dim),
                                     bind.matrix(p + "ffn_up" + suffix, ffn.shared_hidden, c.dim),
                                     bind.matrix(p + "ffn_down" + suffix, c.dim, ffn.shared_hidden), std::nullopt};
      if (ffn.shared_gated) L.shared->gate_inp = bind.vector(p + "ffn_gate_inp_shexp.weight", c.dim);
    }
    if (ffn.split_norms) {
      L.split_norms = SplitFfnNorms{bind.vector(p + "post_ffw_norm_1.weight", c.dim),
                                    bind.vector(p + "pre_ffw_norm_2.weight", c.dim),
                                    bind.vector(p + "post_ffw_norm_2.weight", c.dim)};
    }
    if (ffn.router_input == RouterInput::kScaledNorm) L.router_scale = bind.vector(p + "ffn_gate_inp.scale", c.dim);
    if (ffn.expert_scales) L.expert_scale = bind.vector(p + "ffn_down_exps.scale", ffn.n_experts);
    L.output_scale = bind.optional_vector(p + "layer_output_scale.weight", 1,
                                          c.layers[l].output_scale ? TensorRule::kRequired : TensorRule::kAbsent);
    L.bo = bind.optional_vector(p + "attn_output.bias", c.dim, arch.output_bias);
    L.attn_sinks = bind.optional_vector(p + "attn_sinks.weight", c.n_heads, arch.sinks);
    const TensorRule post = c.layers[l].post_norms ? TensorRule::kRequired : TensorRule::kAbsent;
    L.post_attn_norm = bind.optional_vector(p + "post_attention_norm.weight", c.dim, post);
    L.post_ffn_norm = bind.optional_vector(p + "post_ffw_norm.weight", c.dim, post);
    if (ffn.routed() && arch.expert_biases == TensorRule::kRequired) {
      L.router_bias = bind.vector(p + "ffn_gate_inp.bias", ffn.n_experts);
      L.b_gate = bind.vector_stack(p + "ffn_gate_exps.bias", ffn.hidden, ffn.n_experts);
      L.b_up = bind.vector_stack(p + "ffn_up_exps.bias", ffn.hidden, ffn.n_experts);
      L.b_down = bind.vector_stack(p + "ffn_down_exps.bias", c.dim, ffn.n_experts);
    }
  }
  if (c.per_layer_input_dim > 0) {
    const uint64_t all = uint64_t{c.per_layer_input_dim} * c.n_layers;
    w.per_layer_inputs = PerLayerInputTables{bind.matrix("per_layer_token_embd.weight", c.vocab_size, all),
                                             bind.matrix("per_layer_model_proj.weight", all, c.dim),
                                             bind.vector("per_layer_proj_norm.weight", c.per_layer_input_dim)};
  }
  w.output_norm = bind.vector("output_norm.weight", c.dim);
  w.output = bind.optional_matrix("output.weight", c.vocab_size, c.dim).value_or(w.token_embd);
  w.rope_freqs = bind.optional_vector("rope_freqs.weight", c.rope_dim / 2, arch.rope_freqs);
  if (w.rope_freqs) {
    // Rope frequencies are divided by these factors: zero, negative or NaN would poison every position.
    std::vector<float> factors(c.rope_dim / 2);
    dequantize_row(GgmlType::kF32, w.rope_freqs->data, factors.data(), factors.size());
    for (size_t i = 0; i < factors.size(); ++i) {
      if (!(factors[i] > 0.0f) || !std::isfinite(factors[i])) {
        throw Error(ErrorCode::kCorrupt, "tensor 'rope_freqs.weight' holds " + std::to_string(factors[i]) + " at index " +
                                             std::to_string(i) + "; rope frequency factors must be positive and finite");
      }
    }
  }
  bind.reject_unexpected();
  return model;
}

std::vector<const TensorRef*> step_matrices(const LlamaWeights& w) {
  std::vector<const TensorRef*> out;
  out.reserve(w.layers.size() * 7 + 1);
  for (const LayerWeights& l : w.layers) {
    out.insert(out.end(), {&l.w_gate, &l.w_up, &l.w_down});
    if (l.deltanet) {
      const DeltaNetWeights& d = *l.deltanet;
      out.insert(out.end(), {&d.qkv, &d.z, &d.beta, &d.alpha, &d.out});
    } else {
      out.insert(out.end(), {&l.wq, &l.wo});
      if (l.wk.data != nullptr) out.push_back(&l.wk);     // none in a KV-sharing layer
      if (l.wv.data != l.wk.data) out.push_back(&l.wv);  // Gemma 4's global layers reuse K for V
    }
    if (l.router) out.push_back(&*l.router);
    if (l.shared) out.insert(out.end(), {&l.shared->gate, &l.shared->up, &l.shared->down});
    if (l.per_layer_input) out.insert(out.end(), {&l.per_layer_input->gate, &l.per_layer_input->proj});
  }
  if (w.per_layer_inputs) out.push_back(&w.per_layer_inputs->model_proj);
  out.push_back(&w.output);
  return out;
}

uint64_t step_matrix_bytes(const LlamaWeights& w) {
  uint64_t bytes = 0;
  for (const TensorRef* m : step_matrices(w)) bytes += m->nbytes;
  return bytes;
}

std::vector<float> scaled_norm_router_weight(const TensorRef& scale, uint32_t dim) {
  std::vector<float> weight(scale.cols);
  dequantize_row(scale.type, scale.data, weight.data(), weight.size());
  const float inv_sqrt_dim = 1.0f / std::sqrt(static_cast<float>(dim));
  for (float& f : weight) f *= inv_sqrt_dim;
  return weight;
}

void dequantize_tensor_row(const TensorRef& t, uint64_t row, float* out) {
  if (row >= t.rows) {
    throw Error(ErrorCode::kInvalidArgument, "row " + std::to_string(row) + " of tensor '" + t.name + "' is out of range (" +
                                                 std::to_string(t.rows) + " rows)");
  }
  if (t.layout != WeightLayout::kGguf) {
    throw Error(ErrorCode::kInvalidArgument, "tensor '" + t.name + "' is the CPU runner's packed copy: its rows "
                                             "are read by the amx level's kernels only");
  }
  dequantize_row(t.type, t.row(row), out, t.cols);
}

}  // namespace vks
