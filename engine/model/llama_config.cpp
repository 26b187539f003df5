#include "engine/model/llama_config.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
                                             " experts is not supported (experts run for: llama, qwen3moe)");
  }
  c.n_experts = n;
  c.n_experts_used = keys.required_uint("expert_used_count", n);
  c.expert_hidden_dim = keys.optional_uint("expert_feed_forward_length", kMaxDim).value_or(c.hidden_dim);
}

}  // namespace

uint32_t LlamaConfig::max_ffn_hidden() const {
  uint32_t m = 0;
  for (const LayerSpec& l : layers) m = std::max(m, l.ffn.hidden);
  return m;
}

ParameterCounts count_parameters(const LlamaConfig& c) {
  const uint64_t d = c.dim;
  const uint64_t embeddings = uint64_t{c.vocab_size} * d * (c.tied_embeddings ? 1 : 2);
  ParameterCounts n{embeddings, embeddings};
  for (const LayerSpec& l : c.layers) {
    const uint64_t attention = d * c.q_dim() * 2 + 2 * d * c.kv_dim();
    const uint64_t expert = 3 * d * l.ffn.hidden;
    const uint64_t router = l.ffn.routed() ? d * l.ffn.n_experts : 0;
    n.total += attention + router + expert * l.ffn.n_experts;
    n.active += attention + router + expert * l.ffn.n_used;
  }
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
                                             "; e.g. Llama 2/3, Mistral, Mixtral, TinyLlama, SmolLM2, Qwen2.5, Qwen3, Qwen3-30B-A3B, Phi-3)");
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
  c.n_kv_heads = keys.optional_uint("attention.head_count_kv", kMaxDim).value_or(c.n_heads);
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
  if (c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0) {
    inconsistent("head_count " + std::to_string(c.n_heads) + " is not a multiple of head_count_kv " +
                 std::to_string(c.n_kv_heads));
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

  // llama.cpp: linear scaling divides positions by the factor. YaRN and LongRoPE need attention
  // factors vkstream does not implement; Llama 3.1 scaling comes as the rope_freqs.weight tensor.
  const auto scaling_type = file.get_string(keys.key("rope.scaling.type"));
  const auto scaling_factor = keys.optional_float("rope.scaling.factor");
  if (scaling_type && *scaling_type != "none" && *scaling_type != "linear") {
    throw Error(ErrorCode::kUnsupported, "rope scaling type '" + *scaling_type +
                                             "' (key " + keys.key("rope.scaling.type") +
                                             ") is not supported (supported: none, linear; Llama 3.1 scaling "
                                             "through a rope_freqs.weight tensor)");
  }
  if ((!scaling_type || *scaling_type == "linear") && scaling_factor && *scaling_factor != 0.0f &&
      *scaling_factor != 1.0f) {
    if (*scaling_factor < 0.0f) inconsistent("rope.scaling.factor must not be negative");
    c.rope_freq_scale = 1.0f / *scaling_factor;
    c.rope_scaling = "linear";
  }

  // Attention vkstream does not run yet: refuse rather than compute something else.
  if (const auto window = file.get_int(keys.key("attention.sliding_window")); window && *window > 0) {
    throw Error(ErrorCode::kUnsupported, "sliding-window attention (" + keys.key("attention.sliding_window") + " = " +
                                             std::to_string(*window) + ") is not supported yet");
  }

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

  // Every layer alike: experts where the model has them, else a dense block (one expert).
  LayerSpec layer;
  if (c.n_experts > 1) {
    layer.ffn = FfnSpec{c.expert_hidden_dim, c.n_experts, c.n_experts_used, info->routing, FfnActivation::kSilu};
  } else {
    layer.ffn = FfnSpec{c.hidden_dim, 1, 1, {}, FfnActivation::kSilu};
  }
  c.layers.assign(c.n_layers, layer);
  return c;
}

}  // namespace vks
