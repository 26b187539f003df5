#pragma once
// The shape and weight type of a synthetic llama model, with presets for real models' shapes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/gguf/ggml_type.h"

namespace vks::tools {

struct ModelSpec {
  std::string name = "synthetic";
  uint32_t dim = 64;
  uint32_t n_layers = 2;
  uint32_t n_heads = 4;
  uint32_t n_kv_heads = 2;
  uint32_t hidden_dim = 192;
  uint32_t vocab_size = 512;
  uint32_t context_length = 256;
  float rope_freq_base = 10000.0f;
  float norm_eps = 1e-5f;
  bool tied_embeddings = false;
  GgmlType type = GgmlType::kF32;  // every matrix; norm weights are always F32
  uint64_t seed = 1;
  float init_scale = 1.0f;         // matrix weights ~ N(0, init_scale^2 / cols)

  uint32_t head_dim() const { return dim / n_heads; }
  uint64_t n_parameters() const;
};

std::vector<std::string> preset_names();
// nullopt for an unknown name.
std::optional<ModelSpec> preset(const std::string& name);

// llama.cpp's general.file_type (LLAMA_FTYPE_*) for a model whose matrices are all of type t.
uint32_t llama_file_type(GgmlType t);
// Parses a type name (case-insensitive) of a type the tool can write (one with a quantizer in
// ggml_type.cpp's table); nullopt otherwise.
std::optional<GgmlType> parse_weight_type(const std::string& s);
// "f32, f16, ...": the types parse_weight_type accepts, for help and messages.
std::string weight_type_names();

// Throws vks::Error(kInvalidArgument) naming the first impossible setting.
void validate(const ModelSpec& spec);

}  // namespace vks::tools
