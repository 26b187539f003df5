#pragma once
// Tokenizers built from a GGUF's tokenizer.ggml.* keys. This issue: the SentencePiece-style
// `llama` model; the interface leaves room for the BPE (`gpt2`) model.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace vks {

using TokenId = int32_t;

enum class TokenType : int32_t {  // tokenizer.ggml.token_type values
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Throws vks::Error(kUnsupported) for an unknown tokenizer.ggml.model, kCorrupt for bad keys.
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::GgufFile& file);

  // Text to ids. add_bos prepends BOS. Control-token text in the input is NOT parsed as control
  // tokens unless parse_special is true.
  virtual std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special = false) const = 0;
  // Ids to text (control tokens produce no text; byte tokens produce their byte; the leading space
  // of the first piece after BOS is dropped, as llama.cpp does).
  virtual std::string decode(std::span<const TokenId> ids) const = 0;
  // Raw bytes one token contributes to decoded text (may be part of a UTF-8 character).
  virtual std::string token_bytes(TokenId id) const = 0;
  virtual std::string_view token_text(TokenId id) const = 0;  // the vocabulary string
  virtual TokenType token_type(TokenId id) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual TokenId bos() const = 0;
  virtual TokenId eos() const = 0;
  virtual TokenId unk() const = 0;
  virtual bool is_eog(TokenId id) const = 0;  // end of generation (EOS, EOT)
  virtual bool add_bos_default() const = 0;    // tokenizer.ggml.add_bos_token (default true)
};

// Streaming decode: push ids one at a time; each push returns the text that became complete.
// Never returns half of a UTF-8 character; concatenating every push() plus flush() equals
// Tokenizer::decode of all ids.
class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tok);
  std::string push(TokenId id);
  std::string flush();  // whatever is held back (invalid/incomplete UTF-8 becomes U+FFFD)

 private:
  const Tokenizer& tok_;
  std::string pending_;  // bytes of an incomplete UTF-8 sequence
  bool first_piece_ = true;
  bool after_bos_ = false;
};

}  // namespace vks
