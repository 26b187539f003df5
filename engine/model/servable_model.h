#pragma once
// The one verdict on whether vkstreamd can serve a GGUF, used by vkstreamd and vks-gguf-info so
// that both say the same thing about a file: the model must load (supported architecture, every
// tensor present with a supported type) and so must its tokenizer.
#include <memory>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_model.h"
#include "engine/tokenizer/tokenizer.h"

namespace vks {

struct ServableModel {
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<Tokenizer> tokenizer;  // reads the model's mapping: destroy it first
};

// Loads what vkstreamd serves. Throws vks::Error with the reason it cannot (the same message and
// code whichever tool asks).
ServableModel load_servable_model(gguf::GgufFile file);
ServableModel load_servable_model(const std::string& path);

// One line about a servable model: architecture, sizes, rope, and its weight types with counts,
// e.g. "qwen2 model: dim 128, layers 3, ... weights: f32 x 22, q4_K x 12".
std::string describe_servable_model(const LlamaModel& model);

}  // namespace vks
