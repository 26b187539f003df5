#include "engine/model/servable_model.h"

#include <cstdio>
#include <map>

#include "engine/common/error.h"

namespace vks {

ServableModel load_servable_model(gguf::GgufFile file) {
  ServableModel served;
  served.model = LlamaModel::from_file(std::move(file));
  served.tokenizer = Tokenizer::from_gguf(served.model->file());
  return served;
}

ServableModel load_servable_model(const std::string& path) {
  gguf::GgufFile file = gguf::GgufFile::open(path);
  try {
    return load_servable_model(std::move(file));
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

std::string describe_servable_model(const LlamaModel& model) {
  const LlamaConfig& c = model.config();
  const LlamaWeights& w = model.weights();
  char line[512];
  std::snprintf(line, sizeof(line),
                "%s model: dim %u, layers %u, heads %u (kv %u, head %u), hidden %u, vocab %u, context %u, "
                "rope %s base %g%s%s, eps %g, %s embeddings",
                c.architecture.c_str(), c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.hidden_dim,
                c.vocab_size, c.context_length, std::string(rope_mode_name(c.rope_mode)).c_str(),
                static_cast<double>(c.rope_freq_base), c.rope_scaling == "none" ? "" : (", " + c.rope_scaling + " scaling").c_str(),
                w.rope_freqs ? ", rope_freqs factors" : "", static_cast<double>(c.norm_eps),
                c.tied_embeddings ? "tied" : "separate output");
  std::string s = line;
  if (!w.layers.empty() && w.layers[0].bq) s += ", q/k/v biases";
  if (!w.layers.empty() && w.layers[0].attn_q_norm) s += ", q/k norms";
  if (c.n_experts > 1) {
    s += ", experts " + std::to_string(c.n_experts) + " (" + std::to_string(c.n_experts_used) + " per token, " +
         std::to_string(c.expert_hidden_dim) + " rows each)";
  }
  const ParameterCounts params = count_parameters(c);
  s += ", " + std::to_string(params.total) + " parameters";
  if (params.active != params.total) s += " (" + std::to_string(params.active) + " active per token)";
  std::map<std::string, size_t> types;  // weight type name -> tensors
  for (const gguf::TensorInfo& t : model.file().tensors()) ++types[std::string(ggml_type_name(t.type))];
  s += "; tensor types:";
  bool first = true;
  for (const auto& [name, count] : types) {
    s += (first ? " " : ", ") + name + " x " + std::to_string(count);
    first = false;
  }
  return s;
}

}  // namespace vks
