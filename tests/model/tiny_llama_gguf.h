#pragma once
// Builds small llama GGUFs in memory with GgufWriter, optionally broken in one chosen way, for the
// model-validation tests and as fuzzing seeds.
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"

namespace vks::test {

struct TinyLlamaSpec {
  uint32_t dim = 64;
  uint32_t n_layers = 2;
  uint32_t n_heads = 4;
  uint32_t n_kv_heads = 2;
  uint32_t hidden = 96;
  uint32_t vocab = 40;
  uint32_t context = 128;
  GgmlType matrix_type = GgmlType::kF32;
  bool tied = false;
  std::string architecture = "llama";
  // Hooks to break the file: called with the tensor name; return false to leave the tensor out.
  std::function<bool(const std::string&)> keep_tensor = [](const std::string&) { return true; };
  // May change a tensor's dims or type before it is declared.
  std::function<void(const std::string&, std::vector<uint64_t>&, GgmlType&)> edit_tensor =
      [](const std::string&, std::vector<uint64_t>&, GgmlType&) {};
  std::function<void(gguf::GgufWriter&)> edit_metadata = [](gguf::GgufWriter&) {};
  // Tensors a llama model does not use, appended at the end (name, dims), F32.
  std::vector<std::pair<std::string, std::vector<uint64_t>>> extra_f32_tensors;
};

inline std::vector<uint8_t> build_tiny_llama(const TinyLlamaSpec& s) {
  using namespace gguf;
  GgufWriter w;
  const std::string a = s.architecture;
  w.set("general.architecture", make_string(a));
  w.set("general.name", make_string("tiny-test"));
  w.set(a + ".embedding_length", make_uint32(s.dim));
  w.set(a + ".block_count", make_uint32(s.n_layers));
  w.set(a + ".attention.head_count", make_uint32(s.n_heads));
  w.set(a + ".attention.head_count_kv", make_uint32(s.n_kv_heads));
  w.set(a + ".feed_forward_length", make_uint32(s.hidden));
  w.set(a + ".context_length", make_uint32(s.context));
  w.set(a + ".attention.layer_norm_rms_epsilon", make_float32(1e-5f));
  std::vector<std::string> tokens;
  for (uint32_t k = 0; k < s.vocab; ++k) tokens.push_back(std::string("t").append(std::to_string(k)));
  w.set("tokenizer.ggml.model", make_string("llama"));
  w.set("tokenizer.ggml.tokens", make_string_array(tokens));
  s.edit_metadata(w);

  const uint64_t head_dim = s.dim / s.n_heads;
  struct Decl { std::string name; std::vector<uint64_t> dims; GgmlType type; };
  std::vector<Decl> decls;
  auto matrix = [&](const std::string& n, uint64_t rows, uint64_t cols) { decls.push_back({n, {cols, rows}, s.matrix_type}); };
  auto vec = [&](const std::string& n, uint64_t len) { decls.push_back({n, {len}, GgmlType::kF32}); };
  matrix("token_embd.weight", s.vocab, s.dim);
  for (uint32_t l = 0; l < s.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    vec(p + "attn_norm.weight", s.dim);
    matrix(p + "attn_q.weight", s.n_heads * head_dim, s.dim);
    matrix(p + "attn_k.weight", s.n_kv_heads * head_dim, s.dim);
    matrix(p + "attn_v.weight", s.n_kv_heads * head_dim, s.dim);
    matrix(p + "attn_output.weight", s.dim, s.n_heads * head_dim);
    vec(p + "ffn_norm.weight", s.dim);
    matrix(p + "ffn_gate.weight", s.hidden, s.dim);
    matrix(p + "ffn_up.weight", s.hidden, s.dim);
    matrix(p + "ffn_down.weight", s.dim, s.hidden);
  }
  vec("output_norm.weight", s.dim);
  if (!s.tied) matrix("output.weight", s.vocab, s.dim);
  for (const auto& [name, dims] : s.extra_f32_tensors) decls.push_back({name, dims, GgmlType::kF32});

  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<std::vector<uint8_t>> data;
  for (Decl& d : decls) {
    if (!s.keep_tensor(d.name)) continue;
    s.edit_tensor(d.name, d.dims, d.type);
    const TensorInfo& t = w.add_tensor(d.name, d.type, d.dims);
    std::vector<uint8_t> bytes(t.nbytes);
    const auto traits = ggml_type_traits(static_cast<uint32_t>(d.type));
    if (traits && traits->quantize != nullptr) {
      std::vector<float> values(t.n_elements());
      for (float& v : values) v = d.dims.size() == 1 ? 1.0f + normal(rng) : normal(rng);
      quantize_row(d.type, values.data(), bytes.data(), values.size());
    }
    data.push_back(std::move(bytes));
  }
  return w.to_bytes(data);
}

}  // namespace vks::test
