#pragma once
// Per-vocabulary tables for grammar masking, built once per tokenizer: every token's bytes and a
// byte trie over them, so finding the tokens a grammar state allows walks only the trie branches
// the grammar accepts (never the whole vocabulary when the state allows few tokens).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace vks::grammar {

class TokenIndex {
 public:
  struct Node {
    uint32_t first_child = 0, child_count = 0;  // children are contiguous in nodes()
    uint32_t tokens_begin = 0, tokens_end = 0;  // ids ending here: [begin, end) into node_tokens()
    uint8_t byte = 0;
  };

  explicit TokenIndex(const Tokenizer& tok);
  // For tests: token strings as raw bytes; `end_tokens` are the end-of-generation ids.
  TokenIndex(const std::vector<std::string>& token_bytes, std::vector<TokenId> end_tokens);

  int32_t vocab_size() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(TokenId id) const { return bytes_[static_cast<size_t>(id)]; }
  bool is_end(TokenId id) const;
  const std::vector<TokenId>& end_tokens() const { return end_tokens_; }
  const std::vector<Node>& nodes() const { return nodes_; }  // nodes()[0] is the root
  const std::vector<TokenId>& node_tokens() const { return node_tokens_; }

 private:
  void build();

  std::vector<std::string> bytes_;  // [vocab]; empty for tokens that produce no text
  std::vector<TokenId> end_tokens_;
  std::vector<Node> nodes_;
  std::vector<TokenId> node_tokens_;
};

}  // namespace vks::grammar
