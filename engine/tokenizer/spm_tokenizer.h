#pragma once
// The SentencePiece-style `llama` tokenizer model, exactly as llama.cpp's llm_tokenizer_spm:
// a space is prepended to text that follows a special token (or starts the input), spaces become
// U+2581, then the input's UTF-8 characters are merged pairwise, highest-scoring vocabulary entry
// first (ties: leftmost), and characters no token covers fall back to <0xNN> byte tokens.
#include <string>
#include <unordered_set>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace vks {

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(Vocab vocab);

  std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special = false) const override;
  std::string decode(std::span<const TokenId> ids) const override;
  std::string token_bytes(TokenId id) const override;
  std::string_view token_text(TokenId id) const override;
  TokenType token_type(TokenId id) const override;

  int32_t vocab_size() const override { return vocab_.size(); }
  TokenId bos() const override { return vocab_.bos; }
  TokenId eos() const override { return vocab_.eos; }
  TokenId unk() const override { return vocab_.unk; }
  bool is_eog(TokenId id) const override { return vocab_.is_eog(id); }
  bool add_bos_default() const override { return vocab_.add_bos; }
  bool strips_leading_space() const override { return vocab_.add_space_prefix; }

  const Vocab& vocab() const { return vocab_; }

 private:
  // Appends the tokens of one raw-text fragment (already space-escaped) to `out`.
  void encode_fragment(const std::string& text, std::vector<TokenId>& out) const;
  Vocab vocab_;
  // Every pair of adjacent symbols (UTF-8 characters, split as the merge splits text) inside some
  // token. Merges never cross a point of the text whose two sides form no such pair, so the text is
  // merged in independent pieces there: same result, but small merge queues instead of one huge one.
  std::unordered_set<std::string> inner_pairs_;
};

}  // namespace vks
