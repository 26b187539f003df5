#include "engine/grammar/lazy_grammar.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/grammar/gbnf_text.h"
#include "engine/tokenizer/utf8.h"

namespace vks::grammar {
namespace {

// The trigger's code points; empty when it is not valid UTF-8.
std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    if (!utf8_decode(s, i, cp)) return {};
    out.push_back(cp);
  }
  return out;
}

// How much of the trigger is matched after `matched` code points of it and then `cp`: the longest
// prefix of the trigger that ends the text so far (the KMP automaton's transition).
size_t next_matched(const std::vector<uint32_t>& trigger, size_t matched, uint32_t cp) {
  std::vector<uint32_t> text(trigger.begin(), trigger.begin() + static_cast<std::ptrdiff_t>(matched));
  text.push_back(cp);
  for (size_t n = std::min(text.size(), trigger.size()); n > 0; --n) {
    if (std::equal(text.end() - static_cast<std::ptrdiff_t>(n), text.end(), trigger.begin())) return n;
  }
  return 0;
}

// <family><i>: text that does not contain the trigger, i code points of it being matched at its
// end so far; it may stop in the states `may_stop` allows.
std::string text_without(const std::vector<uint32_t>& trigger, const std::string& family, const std::vector<bool>& may_stop) {
  std::vector<uint32_t> distinct = trigger;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<CodepointRange> others;
  for (uint32_t cp : distinct) others.push_back({cp, cp});
  std::string rules;
  for (size_t i = 0; i < trigger.size(); ++i) {
    rules += family + std::to_string(i) + " ::= " + (may_stop[i] ? "\"\" | " : "") + gbnf_class(others, /*negated=*/true) +
             " " + family + "0";
    for (uint32_t cp : distinct) {
      const size_t next = next_matched(trigger, i, cp);
      if (next == trigger.size()) continue;  // that would complete the trigger: the body's part
      rules += " | " + gbnf_class({{cp, cp}}, false) + " " + family + std::to_string(next);
    }
    rules += "\n";
  }
  return rules;
}

// Whether the body (starting with the trigger) may follow free text that ends with i code points
// of the trigger: not when the two together would hold the trigger earlier ("aab" after "a"
// makes "aaab", whose first trigger starts inside the free text, so that text was not free).
std::vector<bool> body_may_follow(const std::vector<uint32_t>& trigger) {
  std::vector<bool> out(trigger.size());
  for (size_t i = 0; i < trigger.size(); ++i) {
    std::vector<uint32_t> joined(trigger.begin(), trigger.begin() + static_cast<std::ptrdiff_t>(i));
    joined.insert(joined.end(), trigger.begin(), trigger.end());
    out[i] = std::search(joined.begin(), joined.end(), trigger.begin(), trigger.end()) ==
             joined.begin() + static_cast<std::ptrdiff_t>(i);
  }
  return out;
}

}  // namespace

std::string lazy_gbnf(const LazyTrigger& trigger, std::string_view body_rule) {
  const std::vector<uint32_t> word = code_points(trigger.word);
  if (word.empty()) throw CompileError(0, "lazy grammar: the trigger must be non-empty UTF-8 text");
  if (word.size() > kMaxTriggerCodepoints) throw CompileError(0, "lazy grammar: the trigger is too long");
  const std::string body(body_rule);
  if (!trigger.at_start) {
    // Two families of the same automaton: free text to the end of the output (it may stop
    // anywhere), and free text before the body (it may stop only where the trigger that follows
    // is the first one).
    const std::vector<bool> before_body = body_may_follow(word);
    const std::vector<bool> anywhere(word.size(), true);
    if (before_body == anywhere) {
      return "root ::= vkslazyfree0 | vkslazyfree0 " + body + "\n" + text_without(word, "vkslazyfree", anywhere);
    }
    return "root ::= vkslazyfree0 | vkslazytext0 " + body + "\n" + text_without(word, "vkslazyfree", anywhere) +
           text_without(word, "vkslazytext", before_body);
  }
  // Whitespace, then the body, or nothing more, or text whose first character is not the word's.
  std::vector<CodepointRange> not_first{{'\t', '\n'}, {'\r', '\r'}, {' ', ' '}, {word[0], word[0]}};
  std::sort(not_first.begin(), not_first.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return "root ::= vkslazylead " + body + " | vkslazylead | vkslazylead " + gbnf_class(not_first, true) + " vkslazyany\n" +
         "vkslazylead ::= [\\t\\n\\r ]*\nvkslazyany ::= " + gbnf_class({{0, 0x10FFFF}}, false) + "*\n";
}

}  // namespace vks::grammar
