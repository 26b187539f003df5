#include "engine/tokenizer/special_split.h"

namespace vks {

std::vector<TextFragment> split_special_tokens(std::string_view text, const Vocab& vocab, bool parse_special) {
  std::vector<TextFragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({-1, text});
  for (const TokenId id : vocab.special_tokens) {
    const TokenType type = vocab.types[static_cast<size_t>(id)];
    if (!parse_special && (type == TokenType::kControl || type == TokenType::kUnknown)) continue;
    const std::string_view special = vocab.tokens[static_cast<size_t>(id)];
    std::vector<TextFragment> next;
    next.reserve(fragments.size());
    for (const TextFragment& f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (size_t match = rest.find(special); match != std::string_view::npos; match = rest.find(special)) {
        if (match > 0) next.push_back({-1, rest.substr(0, match)});
        next.push_back({id, {}});
        rest.remove_prefix(match + special.size());
      }
      if (!rest.empty()) next.push_back({-1, rest});
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace vks
