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
#include "engine/tokenizer/utf8.h"

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
  // Ids to text (control and unknown tokens produce no text; byte tokens produce their byte; when
  // strips_leading_space(), one leading space of the first piece of the sequence, or of the piece
  // right after a BOS, is dropped, undoing the space encode() prepends). Always valid UTF-8:
  // bytes that do not form a character become U+FFFD. Ids outside the vocabulary produce nothing.
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
  // Whether decoding drops one leading space from the first piece of a sequence (at its start or
  // right after BOS): SentencePiece models prepend that space when encoding.
  virtual bool strips_leading_space() const { return false; }
};

// Streaming decode: push ids one at a time; each push returns the text that became complete.
// Never returns half of a UTF-8 character; concatenating every push() plus flush() equals
// Tokenizer::decode of all ids. decode() and the pieces are always valid UTF-8: bytes that cannot
// form a character become U+FFFD (one per maximal invalid subpart).
class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tok);
  // at_sequence_start = false: the ids continue earlier text (e.g. only the generated tokens of a
  // request are pushed), so the first piece keeps its leading space.
  IncrementalDetokenizer(const Tokenizer& tok, bool at_sequence_start);
  std::string push(TokenId id);
  std::string flush();  // whatever is held back (invalid/incomplete UTF-8 becomes U+FFFD)

 private:
  const Tokenizer& tok_;
  Utf8Stream utf8_;           // holds the bytes of an incomplete UTF-8 sequence
  bool strip_space_ = true;   // the next piece is the first of the sequence (or follows BOS)
};

}  // namespace vks
