#pragma once
// The byte-level BPE `gpt2` tokenizer model, exactly as llama.cpp's llm_tokenizer_bpe: special
// tokens are split out first, the remaining text is cut into pre-tokens by the vocabulary's
// pre-tokenizer regexes, each pre-token's bytes are spelled in GPT-2's byte alphabet, and its
// characters are merged pairwise, lowest merge rank first (ties: leftmost). With ignore_merges
// (llama-bpe, tekken) a pre-token that is itself a vocabulary entry is emitted whole.
#include <string>

#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/string_index.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace vks {

class BpeTokenizer final : public Tokenizer {
 public:
  // Throws vks::Error(kUnsupported) naming an unknown tokenizer.ggml.pre.
  explicit BpeTokenizer(Vocab vocab);
  BpeTokenizer(const BpeTokenizer&) = delete;  // merge_ranks_ points into vocab_.merges
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

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

  const Vocab& vocab() const { return vocab_; }
  bool ignore_merges() const { return pre_.ignore_merges(); }

 private:
  struct Session;
  // Appends the tokens of one special-token-free fragment of the input.
  void encode_fragment(std::string_view text, Session& session, std::vector<TokenId>& out) const;
  // Appends the tokens of one pre-token, already spelled in the byte alphabet.
  void encode_word(const std::string& word, Session& session, std::vector<TokenId>& out) const;

  Vocab vocab_;
  PreTokenizer pre_;
  // "left right" -> rank (= position in vocab_.merges; the first of repeated merges wins).
  StringIndex merge_ranks_;
};

}  // namespace vks
