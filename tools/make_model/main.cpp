// vks-make-model: writes a synthetic llama GGUF (llama.cpp-loadable) of any shape with seeded
// random weights, for tests and benchmarks at realistic sizes.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/architecture.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/make_model/model_generator.h"
#include "tools/make_model/model_spec.h"

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

int run(int argc, char** argv) {
  CLI::App app{"Write a synthetic llama/qwen2/qwen3/phi3/gemma2/gemma3/gpt-oss GGUF with seeded random weights."};
  std::string output, preset_name = "tiny", type_name, output_type_name, arch_name, vocab_from, name, memorize;
  std::optional<uint32_t> dim, layers, heads, kv_heads, hidden, vocab, context;
  std::optional<float> rope_base, norm_eps, init_scale;
  std::optional<uint64_t> seed;
  bool tied = false, untied = false, quiet = false;
  unsigned threads = 0;
  app.add_option("-o,--output", output, "Output GGUF path")->required();
  app.add_option("-p,--preset", preset_name, "Shape preset: " + join(vks::tools::preset_names()))->capture_default_str();
  app.add_option("-t,--type", type_name,
                 "Matrix weight type or recipe: " + vks::tools::weight_format_names() +
                     " (norms are always f32; default: the preset's, f32 for most)");
  app.add_option("--output-type", output_type_name,
                 "Type of output.weight (token_embd when tied) whatever --type says, as llama-quantize's "
                 "--output-tensor-type (its default for q4_0 and most types is q6_K): " +
                     vks::tools::weight_type_names());
  app.add_option("--arch", arch_name, "Architecture: " + vks::supported_architecture_names() + " (default: the preset's)");
  app.add_option("--dim", dim, "Embedding size (llama.embedding_length)");
  app.add_option("--layers", layers, "Transformer blocks (llama.block_count)");
  app.add_option("--heads", heads, "Attention heads");
  app.add_option("--kv-heads", kv_heads, "Key/value heads (grouped-query attention)");
  app.add_option("--hidden", hidden, "Feed-forward size (llama.feed_forward_length)");
  app.add_option("--vocab", vocab, "Vocabulary size (synthetic vocabulary)");
  app.add_option("--context", context, "Context length (llama.context_length)");
  std::optional<uint32_t> head_dim, experts, experts_used, expert_hidden;
  app.add_option("--head-dim", head_dim, "Head size (attention.key_length; default dim / heads)");
  app.add_option("--experts", experts, "Experts per layer (expert_count; 0 = a dense model)");
  app.add_option("--experts-used", experts_used, "Experts each token runs (expert_used_count)");
  app.add_option("--expert-hidden", expert_hidden, "Each expert's feed-forward size (expert_feed_forward_length)");
  app.add_option("--rope-base", rope_base, "Rotary base frequency (llama.rope.freq_base)");
  std::optional<uint32_t> window, window_period, yarn_original;
  std::optional<float> rope_base_swa, attn_softcap, final_softcap, yarn_factor;
  std::string expert_type_name;
  app.add_option("--window", window,
                 "Sliding window in tokens (attention.sliding_window; gemma2, gemma3, gpt-oss; 0 = every layer global)");
  app.add_option("--window-period", window_period,
                 "Write attention.sliding_window_pattern: layer l slides when l % N < N - 1 (default: the "
                 "architecture's, gemma2/gpt-oss 2, gemma3 6; 1 = every layer slides)");
  app.add_option("--rope-base-swa", rope_base_swa, "Local layers' rope base (rope.freq_base_swa; gemma3's default 10000)");
  app.add_option("--attn-softcap", attn_softcap, "gemma2 attn_logit_softcapping (default 50; 0 = none)");
  app.add_option("--final-softcap", final_softcap, "gemma2 final_logit_softcapping (default 30; 0 = none)");
  app.add_option("--yarn-factor", yarn_factor, "YaRN rope scaling factor (rope.scaling.type yarn; gpt-oss presets 32; 0 = none)");
  app.add_option("--yarn-original-context", yarn_original,
                 "rope.scaling.original_context_length (default context / factor; gpt-oss presets 4096)");
  app.add_option("--expert-type", expert_type_name, "Type of the expert matrices (default: --type's; gpt-oss mxfp4)");
  app.add_option("--norm-eps", norm_eps, "RMSNorm epsilon");
  app.add_flag("--tied", tied, "Tie output to token embeddings (no output.weight)");
  app.add_flag("--untied", untied, "Write a separate output.weight");
  app.add_option("--seed", seed, "Random seed for the weights");
  app.add_option("--init-scale", init_scale, "Matrix weights ~ N(0, (scale/sqrt(cols))^2)");
  app.add_option("--name", name, "general.name (default: the preset name)");
  app.add_option("--vocab-from", vocab_from, "Copy tokenizer.* keys (and vocabulary size) from this GGUF");
  app.add_option("--memorize", memorize,
                 "A text file the model continues from any of its tokens (greedy), in --vocab-from's tokens, "
                 "the last followed by the first: a stand-in for a model that quotes its prompt (needs --untied)")
      ->check(CLI::ExistingFile);
  app.add_option("--threads", threads, "Worker threads (0 = all cores)");
  app.add_flag("-q,--quiet", quiet, "Print only errors");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  auto spec = vks::tools::preset(preset_name);
  if (!spec) {
    std::fprintf(stderr, "vks-make-model: unknown preset '%s' (choose one of: %s)\n", preset_name.c_str(),
                 join(vks::tools::preset_names()).c_str());
    return 2;
  }
  if (!type_name.empty()) {
    const auto format = vks::tools::parse_weight_format(type_name);
    if (!format) {
      std::fprintf(stderr, "vks-make-model: unknown --type '%s' (choose one of %s)\n", type_name.c_str(),
                   vks::tools::weight_format_names().c_str());
      return 2;
    }
    spec->type = format->type;
    spec->recipe = format->recipe;
  }
  if (!output_type_name.empty()) {
    spec->output_type = vks::tools::parse_weight_type(output_type_name);
    if (!spec->output_type) {
      std::fprintf(stderr, "vks-make-model: unknown --output-type '%s' (choose one of %s)\n", output_type_name.c_str(),
                   vks::tools::weight_type_names().c_str());
      return 2;
    }
  }
  if (!expert_type_name.empty()) {
    spec->expert_type = vks::tools::parse_weight_type(expert_type_name);
    if (!spec->expert_type) {
      std::fprintf(stderr, "vks-make-model: unknown --expert-type '%s' (choose one of %s)\n", expert_type_name.c_str(),
                   vks::tools::weight_type_names().c_str());
      return 2;
    }
  }
  if (!arch_name.empty() && arch_name != spec->architecture) {
    spec->architecture = arch_name;
    // The preset's architecture-only settings do not carry over to another architecture.
    const vks::ArchitectureInfo* info = vks::find_architecture(arch_name);
    if (info != nullptr && info->window_period == 0) spec->window = 0;
    if (arch_name != "gpt-oss") {
      spec->yarn_factor = 0.0f;
      spec->yarn_original_context = 0;
    }
  }
  if (window) spec->window = *window;
  if (window_period) spec->window_period = *window_period;
  if (rope_base_swa) spec->rope_freq_base_swa = *rope_base_swa;
  if (attn_softcap) spec->attn_softcap = *attn_softcap;
  if (final_softcap) spec->final_softcap = *final_softcap;
  if (yarn_factor) spec->yarn_factor = *yarn_factor;
  if (yarn_original) spec->yarn_original_context = *yarn_original;
  if (tied && untied) {
    std::fprintf(stderr, "vks-make-model: --tied and --untied contradict each other\n");
    return 2;
  }
  if (dim) spec->dim = *dim;
  if (layers) spec->n_layers = *layers;
  if (heads) spec->n_heads = *heads;
  if (kv_heads) spec->n_kv_heads = *kv_heads;
  if (hidden) spec->hidden_dim = *hidden;
  if (head_dim) spec->head_dim_override = *head_dim;
  if (experts) spec->n_experts = *experts;
  if (experts_used) spec->n_experts_used = *experts_used;
  if (expert_hidden) spec->expert_hidden_dim = *expert_hidden;
  if (vocab) spec->vocab_size = *vocab;
  if (context) spec->context_length = *context;
  if (rope_base) spec->rope_freq_base = *rope_base;
  if (norm_eps) spec->norm_eps = *norm_eps;
  if (init_scale) spec->init_scale = *init_scale;
  if (seed) spec->seed = *seed;
  if (!name.empty()) spec->name = name;
  if (tied) spec->tied_embeddings = true;
  if (untied) spec->tied_embeddings = false;

  std::optional<vks::gguf::GgufFile> vocab_file;
  vks::tools::GenerateOptions options;
  options.threads = threads;
  if (!vocab_from.empty()) {
    vocab_file = vks::gguf::GgufFile::open(vocab_from);
    const auto tokens = vocab_file->find("tokenizer.ggml.tokens");
    if (tokens == nullptr || tokens->type != vks::gguf::ValueType::kArray) {
      std::fprintf(stderr, "vks-make-model: %s has no tokenizer.ggml.tokens array\n", vocab_from.c_str());
      return 2;
    }
    const auto n = static_cast<uint32_t>(tokens->arr.size());
    if (n != spec->vocab_size && !quiet) {
      std::fprintf(stderr, "vks-make-model: vocabulary size %u from %s overrides %u (%s)\n", n, vocab_from.c_str(),
                   spec->vocab_size, vocab ? "--vocab" : "preset");
    }
    spec->vocab_size = n;
    options.vocab_from = &*vocab_file;
  }
  if (!memorize.empty()) {
    if (!vocab_file) {
      std::fprintf(stderr, "vks-make-model: --memorize needs --vocab-from (the text is written in its tokens)\n");
      return 2;
    }
    std::ifstream in(memorize, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    options.memorized_text = text.str();
    options.memorized_ids = vks::Tokenizer::from_gguf(*vocab_file)->encode(*options.memorized_text, false);
  }

  const auto start = std::chrono::steady_clock::now();
  const auto result = vks::tools::write_model(*spec, output, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!quiet) {
    std::printf("wrote %s: %s %s %s, dim %u, layers %u, heads %u/%u kv, hidden %u, vocab %u, ctx %u, %s, "
                "%.1fM params, %llu tensors, %.1f MiB in %.2f s\n",
                output.c_str(), spec->architecture.c_str(), spec->name.c_str(),
                spec->recipe == vks::tools::Recipe::kPure ? std::string(vks::ggml_type_name(spec->type)).c_str()
                : spec->recipe == vks::tools::Recipe::kQ4_K_M ? "q4_k_m" : "q5_k_m",
                spec->dim,
                spec->n_layers, spec->n_heads, spec->n_kv_heads, spec->hidden_dim, result.vocab_size,
                spec->context_length, spec->tied_embeddings ? "tied" : "untied", spec->n_parameters() / 1e6,
                static_cast<unsigned long long>(result.n_tensors), result.file_bytes / 1048576.0, seconds);
    if (spec->has_experts()) {
      const auto et = spec->experts_type();
      std::printf("experts: %u per layer of %u rows (%s), %u per token: %.1fM params active per token\n",
                  spec->n_experts, spec->expert_hidden_dim,
                  et ? std::string(vks::ggml_type_name(*et)).c_str() : "as the other matrices", spec->n_experts_used,
                  spec->n_active_parameters() / 1e6);
    }
    if (spec->window != 0) {
      std::printf("sliding window %u, pattern period %s\n", spec->window,
                  spec->window_period != 0 ? std::to_string(spec->window_period).c_str() : "the architecture's default");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "vks-make-model: %s [%s]\n", e.what(), std::string(vks::error_code_name(e.code())).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vks-make-model: %s\n", e.what());
    return 1;
  }
}
