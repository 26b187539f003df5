#include "engine/tokenizer/tokenizer.h"

#include "engine/common/error.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/spm_tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace vks {

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::GgufFile& file) {
  Vocab vocab = Vocab::from_gguf(file);
  if (vocab.model == "llama") return std::make_unique<SpmTokenizer>(std::move(vocab));
  if (vocab.model == "gpt2") return std::make_unique<BpeTokenizer>(std::move(vocab));
  throw Error(ErrorCode::kUnsupported, "tokenizer.ggml.model '" + vocab.model +
                                           "' is not supported (supported: 'llama', 'gpt2')");
}


IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tok) : IncrementalDetokenizer(tok, true) {}

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tok, bool at_sequence_start)
    : tok_(tok), strip_space_(at_sequence_start && tok.strips_leading_space()) {}

std::string IncrementalDetokenizer::push(TokenId id) {
  std::string out;
  if (id >= 0 && id == tok_.bos()) {
    strip_space_ = tok_.strips_leading_space();
    return out;
  }
  const std::string piece = tok_.token_bytes(id);
  const bool strip = strip_space_ && !piece.empty() && piece[0] == ' ';
  strip_space_ = false;
  utf8_.feed(std::string_view(piece).substr(strip ? 1 : 0), out);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out;
  utf8_.finish(out);
  return out;
}

}  // namespace vks
