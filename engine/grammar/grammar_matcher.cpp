#include "engine/grammar/grammar_matcher.h"

#include <algorithm>
#include <utility>

namespace vks::grammar {

namespace {

constexpr uint32_t kMinCodepoint[5] = {0, 0, 0x80, 0x800, 0x10000};

uint32_t pack_partial(uint32_t length, uint32_t remaining, uint32_t bits) {
  return (length << 28) | (remaining << 24) | bits;
}

bool is_surrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

struct Expander {
  const Grammar& g;
  MatchState& out;
  bool* overflow;
  size_t work = 0;

  void fail() {
    if (overflow) *overflow = true;
  }

  // Expands rule references on top of `s` until every resulting stack has a char set on top (or
  // is empty), appending them to `out`. Iterative, with a work cap.
  void expand(ParseStack s) {
    std::vector<ParseStack> todo;
    todo.push_back(std::move(s));
    while (!todo.empty()) {
      ParseStack cur = std::move(todo.back());
      todo.pop_back();
      if (++work > kMaxExpansionsPerStep || cur.frames.size() > kMaxStackDepth || out.size() > kMaxParseStacks) {
        fail();
        return;
      }
      if (cur.frames.empty() || g.elements[cur.frames.back()].kind == ElementKind::kCharSet) {
        out.push_back(std::move(cur));
        continue;
      }
      const uint32_t pos = cur.frames.back();
      cur.frames.pop_back();
      if (g.elements[pos + 1].kind != ElementKind::kEnd) cur.frames.push_back(pos + 1);
      const auto& alternatives = g.rules[g.elements[pos].rule].alternatives;
      for (size_t i = alternatives.size(); i-- > 0;) {
        ParseStack next = (i == 0) ? std::move(cur) : cur;
        if (g.elements[alternatives[i]].kind != ElementKind::kEnd) next.frames.push_back(alternatives[i]);
        todo.push_back(std::move(next));
      }
    }
  }

  // The char set on top of `s` was fully matched: continue after it.
  void complete(const ParseStack& s) {
    ParseStack next;
    next.frames.assign(s.frames.begin(), s.frames.end() - 1);
    const uint32_t pos = s.frames.back();
    if (g.elements[pos + 1].kind != ElementKind::kEnd) next.frames.push_back(pos + 1);
    expand(std::move(next));
  }
};

void normalize(MatchState& state) {
  std::sort(state.begin(), state.end());
  state.erase(std::unique(state.begin(), state.end()), state.end());
}

}  // namespace

MatchState initial_state(const Grammar& g, bool* overflow) {
  MatchState out;
  Expander ex{g, out, overflow};
  for (uint32_t alt : g.rules[g.root].alternatives) {
    ParseStack s;
    if (g.elements[alt].kind != ElementKind::kEnd) s.frames.push_back(alt);
    ex.expand(std::move(s));
  }
  normalize(out);
  return out;
}

MatchState step(const Grammar& g, const MatchState& state, uint8_t b, bool* overflow) {
  MatchState out;
  Expander ex{g, out, overflow};
  for (const ParseStack& s : state) {
    if (s.frames.empty()) continue;
    const uint32_t pos = s.frames.back();
    if (s.partial == 0) {
      if (b < 0x80) {
        if (g.matches(pos, b)) ex.complete(s);
        continue;
      }
      uint32_t length = 0, bits = 0;
      if (b >= 0xC2 && b <= 0xDF) {
        length = 2, bits = b & 0x1Fu;
      } else if (b >= 0xE0 && b <= 0xEF) {
        length = 3, bits = b & 0x0Fu;
      } else if (b >= 0xF0 && b <= 0xF4) {
        length = 4, bits = b & 0x07u;
      } else {
        continue;  // not a lead byte
      }
      const uint32_t remaining = length - 1;
      const uint32_t shift = 6 * remaining;
      const uint32_t lo = std::max(bits << shift, kMinCodepoint[length]);
      const uint32_t hi = std::min((bits << shift) | ((1u << shift) - 1), 0x10FFFFu);
      if (lo <= hi && g.matches_any(pos, lo, hi)) {
        ParseStack next = s;
        next.partial = pack_partial(length, remaining, bits);
        out.push_back(std::move(next));
      }
      continue;
    }
    if ((b & 0xC0) != 0x80) continue;
    const uint32_t length = s.partial >> 28;
    const uint32_t remaining = ((s.partial >> 24) & 0xF) - 1;
    const uint32_t bits = ((s.partial & 0xFFFFFF) << 6) | (b & 0x3Fu);
    if (remaining == 0) {
      if (bits < kMinCodepoint[length] || bits > 0x10FFFF || is_surrogate(bits)) continue;
      if (g.matches(pos, bits)) ex.complete(s);
      continue;
    }
    const uint32_t shift = 6 * remaining;
    const uint32_t lo = std::max(bits << shift, kMinCodepoint[length]);
    const uint32_t hi = std::min((bits << shift) | ((1u << shift) - 1), 0x10FFFFu);
    if (lo <= hi && g.matches_any(pos, lo, hi)) {
      ParseStack next = s;
      next.partial = pack_partial(length, remaining, bits);
      out.push_back(std::move(next));
    }
  }
  if (out.size() > kMaxParseStacks) {
    if (overflow) *overflow = true;
    out.clear();
  }
  normalize(out);
  return out;
}

bool can_end(const MatchState& state) {
  // Sorted: an empty stack (partial 0, no frames) sorts first.
  return !state.empty() && state.front().frames.empty() && state.front().partial == 0;
}

std::string state_key(const MatchState& state) {
  std::string key;
  auto put = [&key](uint32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const ParseStack& s : state) {
    put(s.partial);
    put(static_cast<uint32_t>(s.frames.size()));
    for (uint32_t f : s.frames) put(f);
  }
  return key;
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  state_ = initial_state(*grammar_, &overflow_);
}

bool GrammarMatcher::accept(std::string_view bytes) {
  MatchState s = state_;
  for (char c : bytes) {
    s = step(*grammar_, s, static_cast<uint8_t>(c), &overflow_);
    if (s.empty()) return false;
  }
  state_ = std::move(s);
  return true;
}

bool matches_completely(const Grammar& g, std::string_view text) {
  MatchState s = initial_state(g);
  for (char c : text) {
    s = step(g, s, static_cast<uint8_t>(c));
    if (s.empty()) return false;
  }
  return can_end(s);
}

}  // namespace vks::grammar
