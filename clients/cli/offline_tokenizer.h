#pragma once
// `vkstream tokenize|detokenize --model FILE.gguf`: the model file's own tokenizer in-process, with
// no daemon. Works on any GGUF that holds a tokenizer, vocabulary-only files included, and gives
// the same ids and text as the daemon serving that file.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vks::cli {

// add_bos unset: the model's tokenizer.ggml.add_bos_token, as the daemon does.
// Throws vks::Error (file, tokenizer) with a message naming the problem.
std::vector<int32_t> offline_tokenize(const std::string& model_path, const std::string& text, std::optional<bool> add_bos,
                                      bool parse_special);
// Throws vks::Error(kInvalidArgument) naming the first id outside the vocabulary, as the daemon does.
std::string offline_detokenize(const std::string& model_path, const std::vector<int32_t>& ids);

}  // namespace vks::cli
