#include "engine/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <cstddef>
#include <queue>
#include <unordered_map>
#include <utility>

#include "engine/tokenizer/byte_encoding.h"
#include "engine/tokenizer/llama_utf8.h"
#include "engine/tokenizer/special_split.h"
#include "engine/tokenizer/utf8.h"

namespace vks {
namespace {

// llama.cpp's unicode_len_utf8: the high nibble of the lead byte decides, so stray bytes are
// one-character symbols and a truncated sequence at the end is shortened.
size_t symbol_length(unsigned char lead) {
  static constexpr size_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

struct Symbol {
  int prev = -1;
  int next = -1;
  size_t offset = 0;  // into the word
  size_t n = 0;       // bytes; 0 once merged into its left neighbour
};

struct Bigram {
  int left = 0;
  int right = 0;
  int32_t rank = 0;
  size_t size = 0;  // bytes of left + right when queued; a mismatch later means it is stale
};

// Lowest rank first; among equal ranks the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

// Buffers reused across the pre-tokens of one encode() call.
struct BpeTokenizer::Session {
  std::string sanitized;
  std::string word;
  std::string key;
  std::string piece;
  std::vector<Symbol> symbols;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  // Tokens of the pre-tokens met so far in this call (text repeats its words): spelled word ->
  // [begin, end) in cached_ids. Bounded so that a huge input of distinct words stays linear.
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> cache;
  std::vector<TokenId> cached_ids;
};

namespace {
constexpr size_t kMaxCachedWords = 1 << 16;
}  // namespace

BpeTokenizer::BpeTokenizer(Vocab vocab) : vocab_(std::move(vocab)), pre_(PreTokenizer::for_name(vocab_.pre)) {
  // llama.cpp splits a merge at the first space after its first byte; symbols never hold a raw
  // space (the byte alphabet spells it U+0120), so the whole line is the lookup key, and a line
  // without such a space can never match.
  merge_ranks_.build(vocab_.merges,
                     [](const std::string& merge) { return merge.size() >= 3 && merge.find(' ', 1) != std::string::npos; });
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  Session session;
  for (const TextFragment& fragment : split_special_tokens(text, vocab_, parse_special)) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
    } else {
      encode_fragment(fragment.text, session, out);
    }
  }
  return out;
}

void BpeTokenizer::encode_fragment(std::string_view text, Session& session, std::vector<TokenId>& out) const {
  if (sanitize_utf8_like_llama(text, session.sanitized)) text = session.sanitized;
  for (const std::string_view piece : pre_.split(text)) {
    session.word.clear();
    byte_encode_append(piece, session.word);
    if (pre_.ignore_merges()) {
      if (const TokenId id = vocab_.find(session.word); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    if (const auto hit = session.cache.find(session.word); hit != session.cache.end()) {
      out.insert(out.end(), session.cached_ids.begin() + hit->second.first,
                 session.cached_ids.begin() + hit->second.second);
      continue;
    }
    const size_t first = out.size();
    encode_word(session.word, session, out);
    if (session.cache.size() < kMaxCachedWords) {
      const auto begin = static_cast<uint32_t>(session.cached_ids.size());
      session.cached_ids.insert(session.cached_ids.end(), out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
      session.cache.emplace(session.word, std::make_pair(begin, static_cast<uint32_t>(session.cached_ids.size())));
    }
  }
}

void BpeTokenizer::encode_word(const std::string& word, Session& session, std::vector<TokenId>& out) const {
  std::vector<Symbol>& symbols = session.symbols;
  symbols.clear();
  for (size_t offset = 0; offset < word.size();) {
    Symbol s;
    s.offset = offset;
    s.n = std::min(symbol_length(static_cast<unsigned char>(word[offset])), word.size() - offset);
    offset += s.n;
    s.prev = static_cast<int>(symbols.size()) - 1;
    s.next = offset == word.size() ? -1 : static_cast<int>(symbols.size()) + 1;
    symbols.push_back(s);
  }

  auto try_add_bigram = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    std::string& key = session.key;
    key.assign(word, l.offset, l.n);
    key.push_back(' ');
    key.append(word, r.offset, r.n);
    const int32_t rank = merge_ranks_.find(key);
    if (rank < 0) return;
    session.queue.push({left, right, rank, l.n + r.n});
  };

  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add_bigram(i - 1, i);

  while (!session.queue.empty()) {
    const Bigram bigram = session.queue.top();
    session.queue.pop();
    Symbol& left = symbols[static_cast<size_t>(bigram.left)];
    Symbol& right = symbols[static_cast<size_t>(bigram.right)];
    if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;  // stale

    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = bigram.left;

    try_add_bigram(left.prev, bigram.left);
    try_add_bigram(bigram.left, left.next);
  }

  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<size_t>(i)];
    session.piece.assign(word, s.offset, s.n);
    if (const TokenId id = vocab_.find(session.piece); id >= 0) {
      out.push_back(id);
      continue;
    }
    // No token for the merged text (a vocabulary without some merge result): llama.cpp falls back
    // to single-byte vocabulary entries of the spelled text and drops bytes that have none.
    for (const char c : session.piece) {
      if (const TokenId id = vocab_.find(std::string(1, c)); id >= 0) out.push_back(id);
    }
  }
}

std::string BpeTokenizer::decode(std::span<const TokenId> ids) const {
  std::string bytes;
  for (const TokenId id : ids) bytes += token_bytes(id);
  return utf8_sanitize(bytes);
}

std::string BpeTokenizer::token_bytes(TokenId id) const {
  if (!vocab_.valid(id)) return {};
  const std::string& text = vocab_.tokens[static_cast<size_t>(id)];
  switch (vocab_.types[static_cast<size_t>(id)]) {
    case TokenType::kNormal:
      return byte_decode(text);
    case TokenType::kUserDefined:
      return text;  // added tokens are stored as plain text, not in the byte alphabet
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUnused:
    case TokenType::kUndefined:
    case TokenType::kByte:
      break;
  }
  return {};
}

std::string_view BpeTokenizer::token_text(TokenId id) const {
  if (!vocab_.valid(id)) return {};
  return vocab_.tokens[static_cast<size_t>(id)];
}

TokenType BpeTokenizer::token_type(TokenId id) const {
  if (!vocab_.valid(id)) return TokenType::kUndefined;
  return vocab_.types[static_cast<size_t>(id)];
}

}  // namespace vks
