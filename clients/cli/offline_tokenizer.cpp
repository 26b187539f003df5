#include "clients/cli/offline_tokenizer.h"

#include <memory>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace vks::cli {

std::vector<int32_t> offline_tokenize(const std::string& model_path, const std::string& text, std::optional<bool> add_bos,
                                      bool parse_special) {
  const gguf::GgufFile file = gguf::GgufFile::open(model_path);
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(file);
  return tok->encode(text, add_bos.value_or(tok->add_bos_default()), parse_special);
}

std::string offline_detokenize(const std::string& model_path, const std::vector<int32_t>& ids) {
  const gguf::GgufFile file = gguf::GgufFile::open(model_path);
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(file);
  const int32_t vocab = tok->vocab_size();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(ids[i]) +
                                                   " is outside the vocabulary (0.." + std::to_string(vocab - 1) +
                                                   ") (ids." + std::to_string(i) + ")");
    }
  }
  return tok->decode(ids);
}

}  // namespace vks::cli
