#pragma once
// Writes a synthetic llama GGUF that llama.cpp can load: standard llama.* keys and tensor names,
// seeded random weights, streamed to disk in row chunks (never the whole model in memory).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "tools/make_model/model_spec.h"

namespace vks::tools {

struct GenerateOptions {
  const gguf::GgufFile* vocab_from = nullptr;  // copy its tokenizer.* keys; else synthetic
  unsigned threads = 0;                        // 0 = hardware concurrency
  std::function<void(uint64_t done, uint64_t total)> progress;  // bytes of tensor data
  // A text the model continues: its token ids, each followed by the next (the last by the first).
  // Greedy decoding after any of them goes on with the text, whatever the context: a stand-in for
  // a trained model that quotes or repeats its prompt, at the cost of a real one of that shape
  // (the bench of speculative decoding). Needs untied embeddings. The text is written as the key
  // kMemorizedKey for those that build prompts from it.
  std::optional<std::string> memorized_text;
  std::vector<int32_t> memorized_ids;
};

inline constexpr const char* kMemorizedKey = "vkstream.synthetic.memorized_text";

struct GenerateResult {
  uint64_t file_bytes = 0;
  uint64_t n_tensors = 0;
  uint32_t vocab_size = 0;
};

// spec.vocab_size must already equal the copied vocabulary's size when vocab_from is set.
// Throws vks::Error (kInvalidArgument, kIo).
GenerateResult write_model(const ModelSpec& spec, const std::string& path, const GenerateOptions& options);

}  // namespace vks::tools
