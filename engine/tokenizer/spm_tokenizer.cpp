#include "engine/tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <utility>

#include "engine/tokenizer/special_split.h"
#include "engine/tokenizer/utf8.h"

namespace vks {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  for (const char c : text) {
    if (c == ' ') {
      out += kSpaceMarker;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i, kSpaceMarker.size()) == kSpaceMarker) {
      out.push_back(' ');
      i += kSpaceMarker.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

// llama.cpp splits on the lead byte's high nibble only: continuation and invalid bytes are
// one-byte symbols and a truncated sequence at the end is shortened.
size_t symbol_length(unsigned char lead) {
  static constexpr size_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

// One piece of the text being merged; a doubly linked list over the fragment's characters.
struct Symbol {
  int prev = -1;
  int next = -1;
  size_t offset = 0;  // into the fragment text
  size_t n = 0;       // bytes; 0 once merged into its left neighbour
};

struct Bigram {
  int left = 0;
  int right = 0;
  float score = 0;
  size_t size = 0;  // bytes of left + right when queued; a mismatch later means it is stale
};

// Highest score first; among equal scores the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

// The merge state of one fragment (llama.cpp's llm_tokenizer_spm_session).
class SpmSession {
 public:
  SpmSession(const Vocab& vocab, const std::string& text) : vocab_(vocab), text_(text) {}

  void run(std::vector<TokenId>& out) {
    for (size_t offset = 0; offset < text_.size();) {
      Symbol s;
      s.offset = offset;
      s.n = std::min(symbol_length(static_cast<unsigned char>(text_[offset])), text_.size() - offset);
      offset += s.n;
      s.prev = static_cast<int>(symbols_.size()) - 1;
      s.next = offset == text_.size() ? -1 : static_cast<int>(symbols_.size()) + 1;
      symbols_.push_back(s);
    }
    if (symbols_.empty()) return;

    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) try_add_bigram(i - 1, i);

    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[static_cast<size_t>(bigram.left)];
      Symbol& right = symbols_[static_cast<size_t>(bigram.right)];
      if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;  // stale

      left.n += right.n;
      right.n = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[static_cast<size_t>(right.next)].prev = bigram.left;

      try_add_bigram(left.prev, bigram.left);
      try_add_bigram(bigram.left, left.next);
    }

    for (int i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) {
      resegment(symbols_[static_cast<size_t>(i)], out, 0);
    }
  }

 private:
  std::string symbol_text(const Symbol& s) const { return text_.substr(s.offset, s.n); }

  void try_add_bigram(int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[static_cast<size_t>(left)];
    const Symbol& r = symbols_[static_cast<size_t>(right)];
    std::string merged = text_.substr(l.offset, l.n + r.n);
    const TokenId id = vocab_.find(merged);
    if (id < 0) return;
    queue_.push({left, right, vocab_.scores[static_cast<size_t>(id)], merged.size()});
    rev_merge_[std::move(merged)] = {left, right};
  }

  // Emits a final symbol: its token, else the pieces it was merged from, else its bytes.
  void resegment(const Symbol& s, std::vector<TokenId>& out, size_t depth) {
    const std::string text = symbol_text(s);
    if (const TokenId id = vocab_.find(text); id >= 0) {
      out.push_back(id);
      return;
    }
    const auto merge = rev_merge_.find(text);
    if (merge == rev_merge_.end() || depth > text_.size()) {
      for (const char c : text) {
        const TokenId byte_id = vocab_.byte_to_id[static_cast<unsigned char>(c)];
        if (byte_id >= 0) {
          out.push_back(byte_id);
        } else if (vocab_.unk >= 0) {
          out.push_back(vocab_.unk);  // a vocabulary without byte fallback
        }
      }
      return;
    }
    const auto [left, right] = merge->second;
    resegment(symbols_[static_cast<size_t>(left)], out, depth + 1);
    resegment(symbols_[static_cast<size_t>(right)], out, depth + 1);
  }

  const Vocab& vocab_;
  const std::string& text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
  std::unordered_map<std::string, std::pair<int, int>> rev_merge_;
};

}  // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  for (const std::string& token : vocab_.tokens) {
    size_t prev = std::string::npos;
    for (size_t at = 0; at < token.size();) {
      const size_t n = std::min(symbol_length(static_cast<unsigned char>(token[at])), token.size() - at);
      if (prev != std::string::npos) inner_pairs_.insert(token.substr(prev, at + n - prev));
      prev = at;
      at += n;
    }
  }
}

std::vector<TokenId> SpmTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<TokenId> out;
  if (add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  bool after_special = true;  // the input's start counts as following a special token
  for (const TextFragment& fragment : split_special_tokens(text, vocab_, parse_special)) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      after_special = true;
      continue;
    }
    std::string raw;
    if (vocab_.add_space_prefix && after_special) raw.push_back(' ');
    raw.append(fragment.text);
    encode_fragment(escape_spaces(raw), out);
    after_special = false;
  }
  return out;
}

void SpmTokenizer::encode_fragment(const std::string& text, std::vector<TokenId>& out) const {
  // Cut the text where no token spans the two symbols on either side (see inner_pairs_).
  std::string piece;
  std::string pair;
  size_t piece_start = 0;
  size_t prev = 0;  // start of the previous symbol
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(symbol_length(static_cast<unsigned char>(text[at])), text.size() - at);
    if (at > 0) {
      pair.assign(text, prev, at + n - prev);
      if (!inner_pairs_.contains(pair)) {
        piece.assign(text, piece_start, at - piece_start);
        SpmSession(vocab_, piece).run(out);
        piece_start = at;
      }
    }
    prev = at;
    at += n;
  }
  if (piece_start < text.size()) {
    piece.assign(text, piece_start, std::string::npos);
    SpmSession(vocab_, piece).run(out);
  }
}

std::string SpmTokenizer::decode(std::span<const TokenId> ids) const {
  std::string bytes;
  bool strip_space = strips_leading_space();
  for (const TokenId id : ids) {
    if (id >= 0 && id == vocab_.bos) {
      strip_space = strips_leading_space();
      continue;
    }
    const std::string piece = token_bytes(id);
    const bool strip = strip_space && !piece.empty() && piece[0] == ' ';
    bytes.append(piece, strip ? 1 : 0);
    strip_space = false;
  }
  return utf8_sanitize(bytes);
}

std::string SpmTokenizer::token_bytes(TokenId id) const {
  if (!vocab_.valid(id)) return {};
  const std::string& text = vocab_.tokens[static_cast<size_t>(id)];
  switch (vocab_.types[static_cast<size_t>(id)]) {
    case TokenType::kNormal:
      return unescape_spaces(text);
    case TokenType::kUserDefined:
      return text;
    case TokenType::kByte: {
      // "<0xNN>"; anything else is a malformed vocabulary entry and contributes nothing.
      if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>') return {};
      int value = 0;
      for (size_t i = 3; i < 5; ++i) {
        const char c = text[i];
        int digit = -1;
        if (c >= '0' && c <= '9') digit = c - '0';
        if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
        if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        if (digit < 0) return {};
        value = value * 16 + digit;
      }
      return std::string(1, static_cast<char>(value));
    }
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUnused:
    case TokenType::kUndefined:
      break;
  }
  return {};
}

std::string_view SpmTokenizer::token_text(TokenId id) const {
  if (!vocab_.valid(id)) return {};
  return vocab_.tokens[static_cast<size_t>(id)];
}

TokenType SpmTokenizer::token_type(TokenId id) const {
  if (!vocab_.valid(id)) return TokenType::kUndefined;
  return vocab_.types[static_cast<size_t>(id)];
}

}  // namespace vks
