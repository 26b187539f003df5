#include "tools/make_model/model_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "engine/common/error.h"
#include "engine/model/architecture.h"

namespace vks::tools {

namespace {

uint64_t parameters(const ModelSpec& s, uint64_t experts_counted) {
  const uint64_t d = s.dim, q = uint64_t{s.n_heads} * s.head_dim(), kv = uint64_t{s.n_kv_heads} * s.head_dim();
  const uint64_t ffn = s.has_experts() ? d * s.n_experts + experts_counted * 3 * d * s.expert_hidden_dim
                                       : 3 * d * s.hidden_dim;
  const uint64_t shared = 3 * d * s.shared_hidden();
  const uint64_t attention = d * q * (s.hybrid() ? 2 : 1) + 2 * d * kv + q * d;
  const ModelSpec::DeltaNet& dn = s.deltanet;
  const uint64_t v = uint64_t{dn.v_heads} * dn.head_dim, channels = 2 * uint64_t{dn.groups} * dn.head_dim + v;
  const uint64_t deltanet = d * (channels + 2 * v + 2 * dn.v_heads);
  uint64_t layers = 0;
  for (uint32_t l = 0; l < s.n_layers; ++l) {
    layers += 2 * d + (s.recurrent_layer(l) ? deltanet : attention) + ffn + shared;
  }
  return uint64_t{s.vocab_size} * d * (s.tied_embeddings ? 1 : 2) + d + layers;
}

}  // namespace

uint64_t ModelSpec::n_parameters() const { return parameters(*this, n_experts); }

bool ModelSpec::hybrid() const {
  const ArchitectureInfo* a = find_architecture(architecture);
  return a != nullptr && a->deltanet_layers;
}

bool ModelSpec::recurrent_layer(uint32_t l) const {
  return hybrid() && (l + 1) % std::max(deltanet.full_attention_interval, 1u) != 0;
}

uint32_t ModelSpec::shared_hidden() const {
  const ArchitectureInfo* a = find_architecture(architecture);
  if (a == nullptr || !a->gated_shared_expert) return 0;
  return shared_expert_hidden != 0 ? shared_expert_hidden : expert_hidden_dim;
}

std::optional<GgmlType> ModelSpec::experts_type() const {
  if (expert_type) return expert_type;
  if (architecture == "gpt-oss") return GgmlType::kMXFP4;  // as every converted gpt-oss file
  return std::nullopt;
}
uint64_t ModelSpec::n_active_parameters() const { return parameters(*this, n_experts_used); }

std::vector<std::string> preset_names() {
  return {"tiny", "tiny-moe", "tinyllama-1.1b", "smollm2-135m", "llama-3.2-1b", "qwen2.5-0.5b", "qwen3-30b-a3b",
          "gemma3-small", "gemma3-1b", "gemma2-small", "gpt-oss-small", "gpt-oss-20b", "qwen35-small", "qwen35-0.8b"};
}

std::optional<ModelSpec> preset(const std::string& name) {
  ModelSpec s;
  s.name = name;
  if (name == "tiny") {  // for tests: small, every dimension a multiple of 32
    s.dim = 64; s.n_layers = 2; s.n_heads = 4; s.n_kv_heads = 2; s.hidden_dim = 192;
    s.vocab_size = 512; s.context_length = 256;
  } else if (name == "tiny-moe") {  // for tests: "tiny" with 8 experts, 2 per token
    s.architecture = "qwen3moe";
    s.dim = 64; s.n_layers = 2; s.n_heads = 4; s.n_kv_heads = 2; s.hidden_dim = 192;
    s.vocab_size = 512; s.context_length = 256;
    s.n_experts = 8; s.n_experts_used = 2; s.expert_hidden_dim = 64;
  } else if (name == "qwen3-30b-a3b") {  // Qwen3-30B-A3B: 128 experts of 768 rows, 8 per token
    s.architecture = "qwen3moe";
    s.dim = 2048; s.n_layers = 48; s.n_heads = 32; s.n_kv_heads = 4; s.head_dim_override = 128; s.hidden_dim = 6144;
    s.vocab_size = 151936; s.context_length = 40960; s.rope_freq_base = 1000000.0f; s.norm_eps = 1e-6f;
    s.n_experts = 128; s.n_experts_used = 8; s.expert_hidden_dim = 768;
    s.type = GgmlType::kQ4_K; s.recipe = Recipe::kQ4_K_M;
  } else if (name == "tinyllama-1.1b") {
    s.dim = 2048; s.n_layers = 22; s.n_heads = 32; s.n_kv_heads = 4; s.hidden_dim = 5632;
    s.vocab_size = 32000; s.context_length = 2048;
  } else if (name == "smollm2-135m") {
    s.dim = 576; s.n_layers = 30; s.n_heads = 9; s.n_kv_heads = 3; s.hidden_dim = 1536;
    s.vocab_size = 49152; s.context_length = 2048; s.rope_freq_base = 100000.0f; s.tied_embeddings = true;
  } else if (name == "llama-3.2-1b") {
    s.dim = 2048; s.n_layers = 16; s.n_heads = 32; s.n_kv_heads = 8; s.hidden_dim = 8192;
    s.vocab_size = 128256; s.context_length = 131072; s.rope_freq_base = 500000.0f; s.tied_embeddings = true;
    s.type = GgmlType::kQ4_K; s.recipe = Recipe::kQ4_K_M;  // as the popular downloads
  } else if (name == "qwen2.5-0.5b") {  // dim 896 is not a multiple of 256: Q4_K_M falls back to Q5_0/Q8_0 there
    s.architecture = "qwen2";
    s.dim = 896; s.n_layers = 24; s.n_heads = 14; s.n_kv_heads = 2; s.hidden_dim = 4864;
    s.vocab_size = 151936; s.context_length = 32768; s.rope_freq_base = 1000000.0f; s.norm_eps = 1e-6f;
    s.tied_embeddings = true;
    s.type = GgmlType::kQ4_K; s.recipe = Recipe::kQ4_K_M;
  } else if (name == "gemma3-small" || name == "gemma3-1b" || name == "gemma2-small") {
    // Gemma: tied output, GELU, post-norms; gemma3 adds Q/K norms and windows 5 of 6 layers (rope
    // base 1e6 on the global layers, 10000 on the local ones), gemma2 windows every other layer
    // and soft-caps scores (50) and logits (30).
    s.architecture = name == "gemma2-small" ? "gemma2" : "gemma3";
    s.tied_embeddings = true; s.norm_eps = 1e-6f;
    if (name == "gemma3-1b") {  // Gemma 3 1B; Q4_0 as Google's QAT file, output Q6_K -> Q8_0 (1152 cols)
      s.dim = 1152; s.n_layers = 26; s.n_heads = 4; s.n_kv_heads = 1; s.head_dim_override = 256; s.hidden_dim = 6912;
      s.vocab_size = 262144; s.context_length = 32768; s.rope_freq_base = 1000000.0f; s.window = 512;
      s.type = GgmlType::kQ4_0; s.output_type = GgmlType::kQ6_K;
    } else {  // quick runs: a few MB, one global layer of 6 (gemma3) or every other (gemma2)
      s.dim = 256; s.n_layers = 6; s.n_heads = 4; s.n_kv_heads = 1; s.head_dim_override = 64; s.hidden_dim = 1024;
      s.vocab_size = 4096; s.context_length = 32768; s.window = 128;
      s.rope_freq_base = s.architecture == "gemma3" ? 1000000.0f : 10000.0f;
    }
  } else if (name == "gpt-oss-20b" || name == "gpt-oss-small") {
    // gpt-oss: Q/K/V and output biases, sinks, every other layer a 128-token window, top-4 routing,
    // MXFP4 experts, YaRN x32 over a 4096-token original context (rope base 150000).
    s.architecture = "gpt-oss";
    s.context_length = 131072; s.rope_freq_base = 150000.0f; s.window = 128;
    s.yarn_factor = 32.0f; s.yarn_original_context = 4096;
    s.type = GgmlType::kQ8_0; s.expert_type = GgmlType::kMXFP4;
    if (name == "gpt-oss-20b") {  // ~12 GB: 24 layers of 32 experts of 2880 rows
      s.dim = 2880; s.n_layers = 24; s.n_heads = 64; s.n_kv_heads = 8; s.head_dim_override = 64; s.hidden_dim = 2880;
      s.vocab_size = 201088; s.n_experts = 32; s.n_experts_used = 4; s.expert_hidden_dim = 2880;
    } else {  // the same kinds of layers at ~0.3 GB
      s.dim = 1024; s.n_layers = 8; s.n_heads = 16; s.n_kv_heads = 4; s.head_dim_override = 64; s.hidden_dim = 1024;
      s.vocab_size = 32000; s.n_experts = 16; s.n_experts_used = 4; s.expert_hidden_dim = 1024;
    }
  } else if (name == "qwen35-small" || name == "qwen35-0.8b") {
    // Qwen3.5 dense: three Gated DeltaNet layers to one gated full-attention layer, Q/K norms, a
    // quarter of each head roped, rope base 1e7. "qwen35-0.8b" is a ~0.8B shape (dim 1024, 24
    // layers, 248k-token vocabulary, tied); "qwen35-small" the same kinds of layers in a few MB.
    s.architecture = "qwen35";
    s.norm_eps = 1e-6f; s.rope_freq_base = 10000000.0f; s.tied_embeddings = true;
    if (name == "qwen35-0.8b") {
      s.dim = 1024; s.n_layers = 24; s.n_heads = 8; s.n_kv_heads = 2; s.head_dim_override = 256; s.hidden_dim = 3584;
      s.vocab_size = 248320; s.context_length = 262144;
      s.type = GgmlType::kQ8_0;
    } else {
      s.dim = 256; s.n_layers = 4; s.n_heads = 4; s.n_kv_heads = 2; s.head_dim_override = 64; s.hidden_dim = 512;
      s.vocab_size = 4096; s.context_length = 4096;
      s.deltanet = {4, 64, 2, 4, 2};
    }
  } else {
    return std::nullopt;
  }
  return s;
}

uint32_t llama_file_type(const ModelSpec& spec) {
  if (spec.has_experts() && spec.experts_type() == GgmlType::kMXFP4) return 38;  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
  switch (spec.recipe) {
    case Recipe::kQ4_K_M: return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M
    case Recipe::kQ5_K_M: return 17;  // LLAMA_FTYPE_MOSTLY_Q5_K_M
    case Recipe::kPure: break;
  }
  return llama_file_type(spec.type);
}

uint32_t llama_file_type(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return 0;    // LLAMA_FTYPE_ALL_F32
    case GgmlType::kF16: return 1;    // LLAMA_FTYPE_MOSTLY_F16
    case GgmlType::kQ4_0: return 2;   // LLAMA_FTYPE_MOSTLY_Q4_0
    case GgmlType::kQ4_1: return 3;   // LLAMA_FTYPE_MOSTLY_Q4_1
    case GgmlType::kQ8_0: return 7;   // LLAMA_FTYPE_MOSTLY_Q8_0
    case GgmlType::kQ5_0: return 8;   // LLAMA_FTYPE_MOSTLY_Q5_0
    case GgmlType::kQ5_1: return 9;   // LLAMA_FTYPE_MOSTLY_Q5_1
    case GgmlType::kQ2_K: return 10;  // LLAMA_FTYPE_MOSTLY_Q2_K
    case GgmlType::kQ3_K: return 12;  // LLAMA_FTYPE_MOSTLY_Q3_K_M (llama.cpp has no pure Q3_K type)
    case GgmlType::kQ4_K: return 14;  // LLAMA_FTYPE_MOSTLY_Q4_K_S
    case GgmlType::kQ5_K: return 16;  // LLAMA_FTYPE_MOSTLY_Q5_K_S
    case GgmlType::kQ6_K: return 18;  // LLAMA_FTYPE_MOSTLY_Q6_K
    case GgmlType::kIQ4_NL: return 25;  // LLAMA_FTYPE_MOSTLY_IQ4_NL
    case GgmlType::kIQ4_XS: return 30;  // LLAMA_FTYPE_MOSTLY_IQ4_XS
    case GgmlType::kBF16: return 32;  // LLAMA_FTYPE_MOSTLY_BF16
    case GgmlType::kMXFP4: return 38;  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE (llama.cpp's only MXFP4 file type)
    default: break;
  }
  throw Error(ErrorCode::kInvalidArgument, "no llama file type for " + std::string(ggml_type_name(t)));
}

std::optional<GgmlType> parse_weight_type(const std::string& s) {
  const auto t = ggml_type_from_name(s);
  if (!t) return std::nullopt;
  const auto traits = ggml_type_traits(*t);
  if (!traits || traits->quantize == nullptr) return std::nullopt;
  return t;
}

std::string weight_type_names() {
  std::string list;
  for (const GgmlType t : supported_ggml_types()) {
    if (ggml_type_traits(t)->quantize != nullptr) list += (list.empty() ? "" : ", ") + std::string(ggml_type_name(t));
  }
  return list;
}

std::optional<WeightFormat> parse_weight_format(const std::string& s) {
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "q4_k_m") return WeightFormat{GgmlType::kQ4_K, Recipe::kQ4_K_M};
  if (lower == "q5_k_m") return WeightFormat{GgmlType::kQ5_K, Recipe::kQ5_K_M};
  const auto t = parse_weight_type(s);
  if (!t) return std::nullopt;
  return WeightFormat{*t, Recipe::kPure};
}

std::string weight_format_names() { return weight_type_names() + ", q4_k_m, q5_k_m"; }

namespace {

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third in between.
bool use_more_bits(uint32_t layer, uint32_t n_layers) {
  const int64_t i = layer, n = n_layers;
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

// llama.cpp's fallback for a K-quant (or IQ4_XS) whose 256-block does not divide the rows.
GgmlType fallback_type(GgmlType t) {
  switch (t) {
    case GgmlType::kQ2_K: case GgmlType::kQ3_K: return GgmlType::kIQ4_NL;
    case GgmlType::kQ4_K: return GgmlType::kQ5_0;
    case GgmlType::kQ5_K: return GgmlType::kQ5_1;
    case GgmlType::kQ6_K: return GgmlType::kQ8_0;
    case GgmlType::kIQ4_XS: return GgmlType::kIQ4_NL;
    default: return t;
  }
}

// Layer number of "blk.N.<...>", or nullopt.
std::optional<uint32_t> layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return std::nullopt;
  return static_cast<uint32_t>(std::stoul(name.substr(4)));
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

GgmlType matrix_type(const ModelSpec& spec, const std::string& name, uint64_t cols) {
  GgmlType t = spec.type;
  if (const auto experts = spec.experts_type(); experts && name.find("_exps.weight") != std::string::npos) {
    return *experts;  // validate() checks the rows hold whole blocks
  }
  const bool output = name == "output.weight" || (spec.tied_embeddings && name == "token_embd.weight");
  if (output && spec.output_type) {
    t = *spec.output_type;
  } else if (spec.recipe != Recipe::kPure) {
    const auto layer = layer_of(name);
    const bool more_bits = layer && (ends_with(name, ".attn_v.weight") || ends_with(name, ".ffn_down.weight") ||
                                   ends_with(name, ".ffn_down_exps.weight")) &&
                           use_more_bits(*layer, spec.n_layers);
    if (output || more_bits) t = GgmlType::kQ6_K;
  }
  const auto traits = ggml_type_traits(t);
  if (traits && cols % traits->block_size != 0) t = fallback_type(t);
  return t;
}

void validate(const ModelSpec& s) {
  auto bad = [](const std::string& m) { throw Error(ErrorCode::kInvalidArgument, m); };
  auto positive = [&](const char* flag, uint64_t v, uint64_t max) {
    if (v == 0 || v > max) bad(std::string(flag) + " must be between 1 and " + std::to_string(max));
  };
  positive("--dim", s.dim, 1 << 16);
  positive("--layers", s.n_layers, 1024);
  positive("--heads", s.n_heads, 1024);
  positive("--kv-heads", s.n_kv_heads, 1024);
  positive("--hidden", s.hidden_dim, 1 << 18);
  positive("--vocab", s.vocab_size, 1 << 22);
  positive("--context", s.context_length, 1 << 24);
  if (s.n_experts != 0 || s.n_experts_used != 0 || s.expert_hidden_dim != 0) {
    if (s.n_experts < 2 || s.n_experts > 4096) bad("--experts must be between 2 and 4096");
    if (s.n_experts_used < 1 || s.n_experts_used > s.n_experts) bad("--experts-used must be between 1 and --experts");
    positive("--expert-hidden", s.expert_hidden_dim, 1 << 18);
  }
  const ArchitectureInfo* arch = find_architecture(s.architecture);
  if (arch != nullptr && arch->experts == TensorRule::kRequired && !s.has_experts()) {
    bad("--arch " + s.architecture + " needs --experts, --experts-used and --expert-hidden");
  }
  if (arch != nullptr && arch->experts == TensorRule::kAbsent && s.has_experts()) {
    bad("--arch " + s.architecture + " has no experts");
  }
  if (s.hybrid()) {
    const ModelSpec::DeltaNet& d = s.deltanet;
    if (d.conv_kernel < 2 || d.conv_kernel > 64) bad("the DeltaNet conv kernel must be between 2 and 64");
    positive("the DeltaNet head size", d.head_dim, 1 << 12);
    positive("the DeltaNet q/k groups", d.groups, 1024);
    positive("the DeltaNet value heads", d.v_heads, 1024);
    positive("the full-attention interval", d.full_attention_interval, 1024);
    if (d.v_heads % d.groups != 0) bad("the DeltaNet value heads must be a multiple of its q/k groups");
    if (s.head_dim() % 8 != 0) bad("a qwen35 head size must be a multiple of 8 (a quarter of it is roped)");
  }
  if (s.head_dim_override == 0 && s.dim % s.n_heads != 0) bad("--dim " + std::to_string(s.dim) + " is not divisible by --heads " + std::to_string(s.n_heads));
  if (s.head_dim() % 2 != 0) bad("head size dim/heads = " + std::to_string(s.head_dim()) + " must be even (rotary embedding)");
  if (s.n_heads % s.n_kv_heads != 0) {
    bad("--heads " + std::to_string(s.n_heads) + " is not a multiple of --kv-heads " + std::to_string(s.n_kv_heads));
  }
  if (!(s.rope_freq_base > 0.0f) || !std::isfinite(s.rope_freq_base)) bad("--rope-base must be positive");
  if (!(s.norm_eps > 0.0f) || s.norm_eps > 1.0f) bad("--norm-eps must be in (0, 1]");
  if (!(s.init_scale > 0.0f) || !std::isfinite(s.init_scale)) bad("--init-scale must be positive");
  if (find_architecture(s.architecture) == nullptr) {
    bad("--arch '" + s.architecture + "' is not supported (supported: " + supported_architecture_names() + ")");
  }
  const ArchitectureInfo& info = *find_architecture(s.architecture);
  if (s.window != 0 && info.window_period == 0) {
    bad("--window: " + s.architecture + " has no sliding windows (they run for gemma2, gemma3, gpt-oss)");
  }
  if (s.window > s.context_length) bad("--window must not exceed --context");
  if (s.window_period != 0 && s.window == 0) bad("--window-period needs --window");
  if (s.window_period > s.n_layers) bad("--window-period must not exceed --layers");
  if ((s.attn_softcap || s.final_softcap) && !info.softcap_keys) bad("--attn-softcap/--final-softcap: only gemma2 reads them");
  if ((s.attn_softcap && !(*s.attn_softcap >= 0.0f)) || (s.final_softcap && !(*s.final_softcap >= 0.0f))) {
    bad("soft-caps must not be negative (0 = none)");
  }
  if (s.rope_freq_base_swa < 0.0f || !std::isfinite(s.rope_freq_base_swa)) bad("--rope-base-swa must be positive");
  if (s.rope_freq_base_swa > 0.0f && s.window == 0) bad("--rope-base-swa needs --window");
  if (s.yarn_factor != 0.0f && !(s.yarn_factor >= 1.0f && std::isfinite(s.yarn_factor))) bad("--yarn-factor must be at least 1");
  if (const auto et = s.experts_type(); et && s.has_experts()) {
    const auto et_traits = ggml_type_traits(*et);
    if (!et_traits || et_traits->quantize == nullptr) bad("unsupported --expert-type (supported: " + weight_type_names() + ")");
    for (const uint32_t v : {s.dim, s.expert_hidden_dim}) {
      if (v % et_traits->block_size != 0) {
        bad("--dim and --expert-hidden must be multiples of " + std::to_string(et_traits->block_size) + ", the " +
            std::string(ggml_type_name(*et)) + " block size of the experts");
      }
    }
  }
  const auto traits = ggml_type_traits(static_cast<uint32_t>(s.type));
  if (!traits || traits->quantize == nullptr) bad("unsupported weight type (supported: " + weight_type_names() + ")");
  // Every matrix row length (dim, n_heads*head_dim == dim, hidden) must hold whole blocks of the
  // type it gets (after a recipe's fallbacks, which only exist for K-quants).
  for (const auto& [flag, v] : {std::pair<const char*, uint32_t>{"--dim", s.dim}, {"--hidden", s.hidden_dim},
                                {"--expert-hidden", s.has_experts() ? s.expert_hidden_dim : s.dim}}) {
    const GgmlType t = s.recipe == Recipe::kPure ? s.type : matrix_type(s, "blk.0.ffn_up.weight", v);
    const uint32_t block = ggml_type_traits(t)->block_size;
    if (v % block != 0) {
      bad(std::string(flag) + " " + std::to_string(v) + " is not a multiple of " + std::to_string(block) +
          ", the " + std::string(ggml_type_name(t)) + " block size (choose another size or --type f16/f32)");
    }
  }
}

}  // namespace vks::tools
