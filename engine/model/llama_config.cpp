#include "engine/model/llama_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "engine/common/error.h"
#include "engine/gguf/file_type.h"

namespace vks {
namespace {

// Sizes beyond these are hostile or a bug; they keep products like dim * vocab in range.
constexpr int64_t kMaxDim = 1 << 20;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxContext = 1 << 24;

class KeyReader {
 public:
  KeyReader(const gguf::GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

  uint32_t required_uint(std::string_view suffix, int64_t max) const {
    const std::string k = key(suffix);
    const auto v = file_.get_int(k);
    if (!v) {
      throw Error(ErrorCode::kCorrupt, "GGUF key '" + k + "' is missing; the file is not a complete " + arch_ +
                                           " model (re-convert it with llama.cpp's convert_hf_to_gguf.py)");
    }
    return checked(k, *v, max);
  }

  std::optional<uint32_t> optional_uint(std::string_view suffix, int64_t max) const {
    const std::string k = key(suffix);
    const auto v = file_.get_int(k);
    if (!v) return std::nullopt;
    return checked(k, *v, max);
  }

  std::optional<float> optional_float(std::string_view suffix) const {
    const std::string k = key(suffix);
    const auto v = file_.get_float(k);
    if (!v) return std::nullopt;
    if (!std::isfinite(*v) || std::fabs(*v) > std::numeric_limits<float>::max()) {
      throw Error(ErrorCode::kCorrupt, "GGUF key '" + k + "' is not a finite float32 value");
    }
    return static_cast<float>(*v);
  }

 private:
  static uint32_t checked(const std::string& k, int64_t v, int64_t max) {
    if (v <= 0 || v > max) {
      throw Error(ErrorCode::kCorrupt, "GGUF key '" + k + "' = " + std::to_string(v) + " is out of range (1.." +
                                           std::to_string(max) + ")");
    }
    return static_cast<uint32_t>(v);
  }

  const gguf::GgufFile& file_;
  std::string arch_;
};

[[noreturn]] void inconsistent(const std::string& what) {
  throw Error(ErrorCode::kCorrupt, "inconsistent llama hyperparameters: " + what);
}

// <arch>.expert_count and friends: 0 and absent both mean a dense model (some llama files write 0).
void read_experts(const gguf::GgufFile& file, const KeyReader& keys, const ArchitectureInfo& arch, LlamaConfig& c) {
  const auto count = file.get_int(keys.key("expert_count"));
  if (count && (*count < 0 || *count > 4096)) inconsistent("expert_count " + std::to_string(*count) + " is out of range (0..4096)");
  const uint32_t n = count ? static_cast<uint32_t>(*count) : 0;
  if (n <= 1) {
    if (arch.experts == TensorRule::kRequired) {
      throw Error(ErrorCode::kCorrupt, "GGUF key '" + keys.key("expert_count") + "' is missing or below 2; a " +
                                           std::string(arch.name) + " model has experts");
    }
    return;
  }
  if (arch.experts == TensorRule::kAbsent) {
    throw Error(ErrorCode::kUnsupported, "a " + std::string(arch.name) + " model with " + std::to_string(n) +
                                             " experts is not supported (experts run for: llama, qwen3moe, qwen35moe, gpt-oss, gemma4)");
  }
  c.n_experts = n;
  c.n_experts_used = keys.required_uint("expert_used_count", n);
  c.expert_hidden_dim = keys.optional_uint("expert_feed_forward_length", kMaxDim).value_or(c.hidden_dim);
}

// rope.scaling.*: linear divides positions by the factor; YaRN blends interpolated and original
// frequencies by rotation count (the ramp between beta_fast and beta_slow rotations over the
// training context); Llama 3.1 scaling comes as the rope_freqs.weight tensor instead.
void read_rope_scaling(const gguf::GgufFile& file, const KeyReader& keys, LlamaConfig& c) {
  const auto type = file.get_string(keys.key("rope.scaling.type"));
  const auto factor = keys.optional_float("rope.scaling.factor");
  if (type && *type != "none" && *type != "linear" && *type != "yarn") {
    throw Error(ErrorCode::kUnsupported, "rope scaling type '" + *type + "' (key " + keys.key("rope.scaling.type") +
                                             ") is not supported (supported: none, linear, yarn; Llama 3.1 scaling "
                                             "through a rope_freqs.weight tensor)");
  }
  if (factor && *factor < 0.0f) inconsistent("rope.scaling.factor must not be negative");
  const bool scaled = factor && *factor != 0.0f && *factor != 1.0f;
  if (type && *type == "yarn") {
    if (!scaled) return;  // a factor of 1: nothing to blend
    c.rope_scaling = "yarn";
    c.rope_freq_scale = 1.0f / *factor;
    c.yarn.factor = *factor;
    c.yarn.original_context =
        keys.optional_uint("rope.scaling.original_context_length", kMaxContext).value_or(c.context_length);
    c.yarn.beta_fast = keys.optional_float("rope.scaling.yarn_beta_fast").value_or(32.0f);
    c.yarn.beta_slow = keys.optional_float("rope.scaling.yarn_beta_slow").value_or(1.0f);
    if (!(c.yarn.beta_fast > 0.0f) || !(c.yarn.beta_slow > 0.0f)) inconsistent("YaRN beta_fast/beta_slow must be positive");
    return;
  }
  if (scaled) {
    c.rope_freq_scale = 1.0f / *factor;
    c.rope_scaling = "linear";
  }
}

// Which layers slide a window (llama.cpp's swa pattern): <arch>.attention.sliding_window_pattern as
// a period (layer l slides when l % period < period - 1) or a per-layer array of booleans, else the
// architecture's default period.
std::vector<bool> sliding_layers(const gguf::GgufFile& file, const KeyReader& keys, const ArchitectureInfo& arch,
                                 uint32_t n_layers) {
  std::vector<bool> sliding(n_layers, false);
  const std::string key = keys.key("attention.sliding_window_pattern");
  const gguf::Value* v = file.find(key);
  if (v != nullptr && v->type == gguf::ValueType::kArray) {
    const auto flags = file.get_int_array(key);
    if (flags->size() != n_layers) {
      inconsistent(key + " has " + std::to_string(flags->size()) + " entries for " + std::to_string(n_layers) +
                   " layers");
    }
    for (uint32_t l = 0; l < n_layers; ++l) sliding[l] = (*flags)[l] != 0;
    return sliding;
  }
  int64_t period = arch.window_period;
  if (v != nullptr) {
    period = file.get_int(key).value_or(0);
    if (period < 0 || period > kMaxLayers) inconsistent(key + " = " + std::to_string(period) + " is out of range");
  }
  // Period 0 or 1: every layer slides (llama.cpp: n_pattern 0 means all layers are SWA).
  for (uint32_t l = 0; l < n_layers; ++l) sliding[l] = slides_in_period(l, static_cast<uint32_t>(period));
  return sliding;
}

// <arch>.attention.head_count_kv: one count for every layer, or one per layer (Gemma 4); absent:
// head_count. c.n_kv_heads becomes the largest.
std::vector<uint32_t> read_kv_heads(const gguf::GgufFile& file, const KeyReader& keys, LlamaConfig& c) {
  const std::string key = keys.key("attention.head_count_kv");
  std::vector<uint32_t> per_layer;
  if (const gguf::Value* v = file.find(key); v != nullptr && v->type == gguf::ValueType::kArray) {
    const auto counts = file.get_int_array(key);
    if (counts->size() != c.n_layers) {
      inconsistent(key + " has " + std::to_string(counts->size()) + " entries for " + std::to_string(c.n_layers) + " layers");
    }
    for (const int64_t n : *counts) {
      if (n <= 0 || n > kMaxDim) inconsistent(key + " holds " + std::to_string(n) + ", out of range");
      per_layer.push_back(static_cast<uint32_t>(n));
    }
  } else {
    per_layer.assign(c.n_layers, keys.optional_uint("attention.head_count_kv", kMaxDim).value_or(c.n_heads));
  }
  c.n_kv_heads = *std::max_element(per_layer.begin(), per_layer.end());
  return per_layer;
}

// What each layer's attention does: head geometry, window, rope, score scale and soft-cap, sinks.
// c.head_dim and c.n_kv_heads become the widest layer's (the sizes of per-token buffers and KV rows).
void read_attention(const gguf::GgufFile& file, const KeyReader& keys, const ArchitectureInfo& arch,
                    const std::vector<uint32_t>& kv_heads, LlamaConfig& c) {
  AttentionSpec global;
  global.head_dim = c.head_dim;
  global.rope_dim = c.rope_dim;
  global.rope_base = c.rope_freq_base;
  global.rope_scale = c.rope_scaling == "yarn" ? 1.0f : c.rope_freq_scale;
  const bool dim_per_head = arch.dim_per_head_scale_layers != 0 && c.n_layers == arch.dim_per_head_scale_layers;
  global.scale = arch.unit_attention_scale
                     ? 1.0f
                     : 1.0f / std::sqrt(static_cast<float>(dim_per_head ? c.dim / c.n_heads : c.head_dim));
  global.value_norm = arch.value_norm;
  if (arch.softcap_keys) {
    global.softcap = keys.optional_float("attn_logit_softcapping").value_or(arch.attn_softcap);
    c.final_softcap = keys.optional_float("final_logit_softcapping").value_or(arch.final_softcap);
    if (global.softcap < 0.0f || c.final_softcap < 0.0f) inconsistent("soft-capping values must not be negative");
  }
  global.sinks = arch.sinks == TensorRule::kRequired;
  global.n_kv_heads = c.n_kv_heads;
  c.embedding_scale = arch.scale_embeddings ? std::sqrt(static_cast<float>(c.dim)) : 1.0f;
  for (LayerSpec& l : c.layers) {
    l.attention = global;
    l.post_norms = arch.post_norms;
    l.output_scale = arch.layer_output_scale;
  }
  // Per-layer KV heads, and the widest layer's geometry for the buffers, once windows are placed.
  auto finish = [&] {
    for (uint32_t l = 0; l < c.n_layers; ++l) c.layers[l].attention.n_kv_heads = kv_heads[l];
    for (const LayerSpec& l : c.layers) c.head_dim = std::max(c.head_dim, l.attention.head_dim);
  };

  const auto window = file.get_int(keys.key("attention.sliding_window"));
  if (!window || *window <= 0) return finish();
  if (arch.window_period == 0) {
    throw Error(ErrorCode::kUnsupported, "sliding-window attention (" + keys.key("attention.sliding_window") + " = " +
                                             std::to_string(*window) + ") is not supported for " +
                                             std::string(arch.name) + " (it runs for gemma2, gemma3, gpt-oss)");
  }
  if (*window > kMaxContext) inconsistent("attention.sliding_window is out of range");
  AttentionSpec local = global;
  local.window = static_cast<uint32_t>(*window);
  local.rope_base = keys.optional_float("rope.freq_base_swa")
                        .value_or(arch.local_rope_base > 0.0f ? arch.local_rope_base : c.rope_freq_base);
  if (!(local.rope_base > 0.0f)) inconsistent("rope.freq_base_swa must be positive");
  if (arch.local_rope_base > 0.0f) local.rope_scale = 1.0f;  // Gemma 3: local layers are never scaled
  // Gemma 4: window layers have heads and rope of their own size, and no rope factors.
  local.head_dim = keys.optional_uint("attention.key_length_swa", kMaxDim).value_or(c.head_dim);
  if (const auto v = keys.optional_uint("attention.value_length_swa", kMaxDim); v && *v != local.head_dim) {
    throw Error(ErrorCode::kUnsupported, "attention.value_length_swa differs from key_length_swa; vkstream needs "
                                         "equal key and value head sizes");
  }
  local.rope_dim = keys.optional_uint("rope.dimension_count_swa", kMaxDim).value_or(std::min(c.rope_dim, local.head_dim));
  if (local.rope_dim > local.head_dim || local.rope_dim % 2 != 0) {
    inconsistent("rope.dimension_count_swa must be even and at most the window layers' head size");
  }
  local.rope_factors = !arch.rope_factors_global_only;
  const std::vector<bool> sliding = sliding_layers(file, keys, arch, c.n_layers);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    if (sliding[l]) c.layers[l].attention = local;
  }
  finish();
}

// Gemma 4's "E" models: the last attention.shared_kv_layers layers read the cache of the last
// earlier layer of their kind (llama.cpp: n_layer - shared - 2 for window layers, - 1 for global
// ones); per-layer inputs of embedding_length_per_layer_input values.
void read_kv_sharing_and_per_layer_inputs(const gguf::GgufFile& file, const KeyReader& keys,
                                          const ArchitectureInfo& arch, LlamaConfig& c) {
  const auto shared = file.get_int(keys.key("attention.shared_kv_layers"));
  const auto per_layer = file.get_int(keys.key("embedding_length_per_layer_input"));
  if (arch.arch != Arch::kGemma4) {
    for (const auto& [key, n] : {std::pair{"attention.shared_kv_layers", shared}, std::pair{"embedding_length_per_layer_input", per_layer}}) {
      if (n && *n > 0) {
        throw Error(ErrorCode::kUnsupported, keys.key(key) + " = " + std::to_string(*n) + " is not supported for " +
                                                 std::string(arch.name) + " (it runs for gemma4)");
      }
    }
    return;
  }
  if (per_layer && (*per_layer < 0 || *per_layer > kMaxDim)) inconsistent("embedding_length_per_layer_input is out of range");
  c.per_layer_input_dim = per_layer ? static_cast<uint32_t>(*per_layer) : 0;
  if (!shared || *shared <= 0) return;
  const int64_t first_shared = int64_t{c.n_layers} - *shared;
  if (first_shared < 2) {
    inconsistent("attention.shared_kv_layers " + std::to_string(*shared) + " leaves fewer than 2 of " +
                 std::to_string(c.n_layers) + " layers with their own keys and values");
  }
  for (uint32_t l = static_cast<uint32_t>(first_shared); l < c.n_layers; ++l) {
    AttentionSpec& a = c.layers[l].attention;
    const uint32_t from = static_cast<uint32_t>(first_shared - (a.windowed() ? 2 : 1));
    const AttentionSpec& source = c.layers[from].attention;
    if (c.layers[from].mixer != Mixer::kAttention || source.windowed() != a.windowed() ||
        source.head_dim != a.head_dim || source.n_kv_heads != a.n_kv_heads) {
      throw Error(ErrorCode::kUnsupported, "layer " + std::to_string(l) + " shares the keys and values of layer " +
                                               std::to_string(from) + ", whose attention differs (kind or head size); "
                                               "vkstream shares a cache only between layers of one kind, as llama.cpp's "
                                               "Gemma 4 files have them");
    }
    a.kv_from = static_cast<int32_t>(from);
  }
}

// Which layers are Gated DeltaNet, as llama.cpp decides: <arch>.attention.recurrent_layers (one
// bool per layer) when present, else <arch>.full_attention_interval (layer l is full attention
// when (l + 1) % interval == 0).
std::vector<bool> recurrent_layers(const gguf::GgufFile& file, const KeyReader& keys, uint32_t n_layers) {
  const std::string key = keys.key("attention.recurrent_layers");
  std::vector<bool> recurrent(n_layers, false);
  if (const gguf::Value* v = file.find(key); v != nullptr) {
    const auto flags = file.get_int_array(key);
    if (!flags || flags->size() != n_layers) {
      inconsistent(key + " must be an array of " + std::to_string(n_layers) + " booleans (one per layer)");
    }
    for (uint32_t l = 0; l < n_layers; ++l) recurrent[l] = (*flags)[l] != 0;
    return recurrent;
  }
  const auto interval = file.get_int(keys.key("full_attention_interval"));
  if (!interval) {
    throw Error(ErrorCode::kCorrupt, "GGUF keys '" + key + "' and '" + keys.key("full_attention_interval") +
                                         "' are both missing; a hybrid model must say which layers are recurrent");
  }
  if (*interval <= 0 || *interval > kMaxLayers) {
    inconsistent(keys.key("full_attention_interval") + " = " + std::to_string(*interval) + " is out of range");
  }
  for (uint32_t l = 0; l < n_layers; ++l) recurrent[l] = (l + 1) % *interval != 0;
  return recurrent;
}

// Qwen3.5: the Gated DeltaNet layers' geometry (ssm.* keys) and the attention layers' output gate.
void read_deltanet(const gguf::GgufFile& file, const KeyReader& keys, LlamaConfig& c) {
  DeltaNetSpec d;
  d.conv_kernel = keys.required_uint("ssm.conv_kernel", 64);
  d.head_dim = keys.required_uint("ssm.state_size", kMaxDim);
  d.n_groups = keys.required_uint("ssm.group_count", kMaxDim);
  d.n_v_heads = keys.required_uint("ssm.time_step_rank", kMaxDim);
  const uint32_t inner = keys.required_uint("ssm.inner_size", kMaxDim);
  if (d.conv_kernel < 2) inconsistent("ssm.conv_kernel must be at least 2");
  if (uint64_t{d.n_v_heads} * d.head_dim != inner) {
    inconsistent("ssm.inner_size " + std::to_string(inner) + " is not ssm.time_step_rank " + std::to_string(d.n_v_heads) +
                 " x ssm.state_size " + std::to_string(d.head_dim));
  }
  if (d.n_v_heads % d.n_groups != 0) {
    inconsistent("ssm.time_step_rank " + std::to_string(d.n_v_heads) + " is not a multiple of ssm.group_count " +
                 std::to_string(d.n_groups));
  }
  if (uint64_t{d.conv_channels()} > static_cast<uint64_t>(kMaxDim)) inconsistent("the DeltaNet q/k/v width is too large");
  const std::vector<bool> recurrent = recurrent_layers(file, keys, c.n_layers);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    LayerSpec& layer = c.layers[l];
    layer.attention.output_gate = true;
    if (!recurrent[l]) continue;
    layer.mixer = Mixer::kDeltaNet;
    layer.deltanet = d;
  }
}

}  // namespace

uint32_t LlamaConfig::max_window() const {
  uint32_t w = 0;
  for (const LayerSpec& l : layers) w = std::max(w, l.attention.window);
  return w;
}

uint32_t LlamaConfig::max_ffn_hidden() const {
  uint32_t m = 0;
  for (const LayerSpec& l : layers) m = std::max({m, l.ffn.hidden, l.ffn.shared_hidden});
  return m;
}

bool LlamaConfig::has_recurrent_layers() const {
  return std::any_of(layers.begin(), layers.end(), [](const LayerSpec& l) { return l.mixer == Mixer::kDeltaNet; });
}

uint64_t LlamaConfig::recurrent_state_bytes() const {
  uint64_t floats = 0;
  for (const LayerSpec& l : layers) {
    if (l.mixer == Mixer::kDeltaNet) floats += l.deltanet.conv_state_size() + l.deltanet.delta_state_size();
  }
  return floats * sizeof(float);
}

uint64_t LlamaConfig::n_attention_layers() const {
  return static_cast<uint64_t>(
      std::count_if(layers.begin(), layers.end(),
                    [](const LayerSpec& l) { return l.mixer == Mixer::kAttention && !l.attention.shares_kv(); }));
}

ParameterCounts count_parameters(const LlamaConfig& c) {
  const uint64_t d = c.dim;
  const uint64_t embeddings = uint64_t{c.vocab_size} * d * (c.tied_embeddings ? 1 : 2);
  ParameterCounts n{embeddings, embeddings};
  for (const LayerSpec& l : c.layers) {
    const uint64_t q_dim = uint64_t{c.n_heads} * l.attention.head_dim;
    const uint64_t gated_q = l.attention.output_gate ? 2 : 1;
    const DeltaNetSpec& dn = l.deltanet;
    // DeltaNet: attn_qkv, attn_gate (z), ssm_out, ssm_beta and ssm_alpha.
    const uint64_t mixer = l.mixer == Mixer::kDeltaNet
                               ? d * (dn.conv_channels() + 2 * dn.v_dim() + 2 * dn.n_v_heads)
                               : d * q_dim * (1 + gated_q) + (l.attention.shares_kv() ? 0 : 2 * d * l.attention.kv_dim());
    const uint64_t expert = 3 * d * l.ffn.hidden;
    const uint64_t router = l.ffn.routed() ? d * l.ffn.n_experts : 0;
    const uint64_t shared = 3 * d * l.ffn.shared_hidden;
    n.total += mixer + router + shared + expert * l.ffn.n_experts;
    n.active += mixer + router + shared + expert * l.ffn.n_used;
  }
  // Per-layer inputs: their token table and projection, and each layer's gate and projection.
  const uint64_t per_layer = uint64_t{c.per_layer_input_dim} * c.n_layers;
  const uint64_t per_layer_params = per_layer * (c.vocab_size + d) + per_layer * 2 * d;
  n.total += per_layer_params;
  n.active += per_layer_params;
  return n;
}

LlamaConfig LlamaConfig::from_gguf(const gguf::GgufFile& file) {
  LlamaConfig c;
  const auto arch = file.get_string("general.architecture");
  if (!arch) {
    throw Error(ErrorCode::kCorrupt, "GGUF key 'general.architecture' is missing; is this a model file?");
  }
  const ArchitectureInfo* info = find_architecture(*arch);
  if (info == nullptr) {
    throw Error(ErrorCode::kUnsupported, "model architecture '" + *arch + "' is not supported (supported: " +
                                             supported_architecture_names() +
                                             "; e.g. Llama 2/3, Mistral, Mixtral, TinyLlama, SmolLM2, Qwen2.5, Qwen3, Qwen3-30B-A3B, Qwen3.5/3.6, Phi-3, Gemma 2/3/4, gpt-oss)");
  }
  c.architecture = *arch;
  c.arch = info->arch;
  c.rope_mode = info->rope_mode;
  c.name = file.get_string("general.name").value_or("");
  c.quantization = gguf::model_quantization(file);

  const KeyReader keys(file, c.architecture);
  c.dim = keys.required_uint("embedding_length", kMaxDim);
  c.n_layers = keys.required_uint("block_count", kMaxLayers);
  c.n_heads = keys.required_uint("attention.head_count", kMaxDim);
  const std::vector<uint32_t> kv_heads = read_kv_heads(file, keys, c);
  c.hidden_dim = keys.required_uint("feed_forward_length", kMaxDim);
  read_experts(file, keys, *info, c);
  c.context_length = keys.required_uint("context_length", kMaxContext);

  const auto key_length = keys.optional_uint("attention.key_length", kMaxDim);
  const auto value_length = keys.optional_uint("attention.value_length", kMaxDim);
  if (key_length) {
    c.head_dim = *key_length;
  } else {
    if (c.dim % c.n_heads != 0) {
      inconsistent("embedding_length " + std::to_string(c.dim) + " is not divisible by head_count " +
                   std::to_string(c.n_heads));
    }
    c.head_dim = c.dim / c.n_heads;
  }
  if (value_length && *value_length != c.head_dim) {
    throw Error(ErrorCode::kUnsupported, "attention.value_length " + std::to_string(*value_length) +
                                             " differs from key_length " + std::to_string(c.head_dim) +
                                             "; vkstream needs equal key and value head sizes");
  }
  for (const uint32_t n : kv_heads) {
    if (n > c.n_heads || c.n_heads % n != 0) {
      inconsistent("head_count " + std::to_string(c.n_heads) + " is not a multiple of head_count_kv " + std::to_string(n));
    }
  }
  if (static_cast<uint64_t>(c.n_heads) * c.head_dim > static_cast<uint64_t>(kMaxDim)) {
    inconsistent("head_count * head size is larger than " + std::to_string(kMaxDim));
  }

  c.rope_dim = keys.optional_uint("rope.dimension_count", kMaxDim).value_or(c.head_dim);
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    inconsistent("rope.dimension_count " + std::to_string(c.rope_dim) + " must be even and at most the head size " +
                 std::to_string(c.head_dim));
  }
  c.rope_freq_base = keys.optional_float("rope.freq_base").value_or(10000.0f);
  if (!(c.rope_freq_base > 0.0f)) inconsistent("rope.freq_base must be positive");

  read_rope_scaling(file, keys, c);

  c.norm_eps = keys.optional_float("attention.layer_norm_rms_epsilon").value_or(1e-5f);
  if (!(c.norm_eps > 0.0f) || c.norm_eps > 1.0f) inconsistent("attention.layer_norm_rms_epsilon must be in (0, 1]");

  // Vocabulary size and tied embeddings come from the tensors (llama.vocab_size is optional).
  if (const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight"); embd != nullptr && embd->dims.size() >= 2) {
    if (embd->dims[1] > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      inconsistent("token_embd.weight has too many rows");
    }
    c.vocab_size = static_cast<uint32_t>(embd->dims[1]);
  } else if (const auto n = keys.optional_uint("vocab_size", std::numeric_limits<int32_t>::max())) {
    c.vocab_size = *n;
  }
  c.tied_embeddings = file.find_tensor("output.weight") == nullptr;
  // Embeddings only (engine/model/pooling.h): an unknown value means the default (mean), not a bad file.
  if (const auto pooling = file.get_int(keys.key("pooling_type")); pooling && *pooling >= 0 && *pooling <= 16) {
    c.pooling_type = static_cast<int32_t>(*pooling);
  }

  // Every layer's feed-forward block alike: experts where the model has them, else a dense block
  // (one expert); attention differs by layer where windows slide.
  LayerSpec layer;
  if (c.n_experts > 1) {
    layer.ffn = FfnSpec{c.expert_hidden_dim, c.n_experts, c.n_experts_used, info->routing, info->activation};
  } else {
    layer.ffn = FfnSpec{c.hidden_dim, 1, 1, {}, info->activation};
  }
  if (info->gated_shared_expert) {
    layer.ffn.shared_hidden = keys.required_uint("expert_shared_feed_forward_length", kMaxDim);
    layer.ffn.shared_gated = true;
  }
  if (info->dense_beside_experts && c.n_experts > 1) {
    layer.ffn.shared_hidden = c.hidden_dim;
    layer.ffn.split_norms = true;
    layer.ffn.router_input = RouterInput::kScaledNorm;
    layer.ffn.expert_scales = true;
  }
  c.layers.assign(c.n_layers, layer);
  read_attention(file, keys, *info, kv_heads, c);
  read_kv_sharing_and_per_layer_inputs(file, keys, *info, c);
  if (info->deltanet_layers) read_deltanet(file, keys, c);
  return c;
}

}  // namespace vks
