// Lazy grammars: free text until the trigger, then only the body. Checked against a plain
// reference (std::string::find for the first trigger, the body grammar alone for the rest) on
// random texts over a small alphabet where near-triggers and overlaps are common, and at the token
// level: before the trigger every token that does not complete a bad trigger is allowed, after it
// only the body's continuations.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/lazy_grammar.h"
#include "engine/grammar/token_constraint.h"

namespace vks::grammar {
namespace {

Grammar lazy(const LazyTrigger& trigger, const std::string& body_rules) {
  return parse_gbnf(lazy_gbnf(trigger, "body") + body_rules);
}

// The reference: free text, or free text up to the first trigger and then a body sentence.
bool reference(const std::string& text, const std::string& trigger, const Grammar& body) {
  const size_t at = text.find(trigger);
  return at == std::string::npos || matches_completely(body, text.substr(at));
}

TEST(LazyGrammar, FreeTextUntilTheTriggerThenOnlyTheBody) {
  // Triggers whose prefixes recur inside them (the automaton's fallbacks matter) and a UTF-8 one.
  for (const std::string trigger : {"aab", "abab", "<tc>", "a\xC3\xA9" "a"}) {
    SCOPED_TRACE(trigger);
    const std::string body_rules = "body ::= \"" + trigger + "\" [0-9]+ \";\"\n";
    const Grammar g = lazy({trigger, false}, body_rules);
    const Grammar body = parse_gbnf("root ::= \"" + trigger + "\" [0-9]+ \";\"\n");
    const std::vector<std::string> alphabet = {"a", "b", "<", "t", "c", ">", "1", "2", ";", " ", "\xC3\xA9", "x"};
    std::mt19937 rng(7);
    size_t accepted = 0, with_trigger = 0;
    for (int i = 0; i < 4000; ++i) {
      std::string text;
      const int length = static_cast<int>(rng() % 14);
      for (int k = 0; k < length; ++k) text += alphabet[rng() % alphabet.size()];
      if (rng() % 3 == 0) text.insert(rng() % (text.size() + 1), trigger + std::to_string(rng() % 100) + ";");
      const bool want = reference(text, trigger, body);
      ASSERT_EQ(matches_completely(g, text), want) << "'" << text << "'";
      accepted += want;
      with_trigger += want && text.find(trigger) != std::string::npos;
    }
    // Both sides are exercised: texts refused, plain texts and triggered ones accepted.
    EXPECT_GT(accepted, 400u);
    EXPECT_LT(accepted, 3600u);
    EXPECT_GT(with_trigger, 100u);
  }
}

TEST(LazyGrammar, AtStartTheFirstCharacterDecides) {
  const Grammar g = lazy({"{", true}, "body ::= \"{\" [0-9]+ \"}\"\n");
  for (const char* ok : {"", "hello", "hello {x", "  \n{12}", "{7}", "x{", " \t"}) {
    EXPECT_TRUE(matches_completely(g, ok)) << ok;
  }
  for (const char* bad : {"{x", "{12} and more", "  {", "\n{1}x"}) {
    EXPECT_FALSE(matches_completely(g, bad)) << bad;
  }
}

TEST(LazyGrammar, BadTriggersAreRefused) {
  EXPECT_THROW(lazy_gbnf({"", false}, "body"), CompileError);
  EXPECT_THROW(lazy_gbnf({"\xC3", false}, "body"), CompileError);
  EXPECT_THROW(lazy_gbnf({"\xC0\xBC", false}, "body"), CompileError);  // an overlong '<'
  EXPECT_THROW(lazy_gbnf({"\xED\xA0\x80", false}, "body"), CompileError);  // a surrogate
  EXPECT_THROW(lazy_gbnf({std::string(kMaxTriggerCodepoints + 1, 'a'), false}, "body"), CompileError);
}

// Token masks: before the trigger, every text token is allowed except one completing the trigger
// into something the body refuses; inside the body, only its continuations; the end token
// wherever the output may stop.
TEST(LazyGrammar, TokenMasksBeforeAndAfterTheTrigger) {
  const std::vector<std::string> vocab = {"", "hi", " there", "<", "tc", ">", "<tc>", "<tc>1", "<tc>x", "1", "2", ";",
                                          "x", "c>", ";\n"};
  const TokenId kEnd = 0;
  auto index = std::make_shared<TokenIndex>(vocab, std::vector<TokenId>{kEnd});
  auto g = std::make_shared<const Grammar>(lazy({"<tc>", false}, "body ::= \"<tc>\" [0-9]+ \";\"\n"));
  TokenConstraint c(g, index);
  auto allowed = [&](TokenId id) { return mask_has(c.allowed(), id); };
  for (TokenId id = 0; id < index->vocab_size(); ++id) {
    const bool completes_badly = vocab[static_cast<size_t>(id)] == "<tc>x";
    EXPECT_EQ(allowed(id), !completes_badly) << vocab[static_cast<size_t>(id)];
  }
  ASSERT_TRUE(c.accept(1));   // "hi"
  ASSERT_TRUE(c.accept(3));   // "<": a trigger may be starting, text may still follow
  EXPECT_TRUE(allowed(12));   // "x"
  EXPECT_TRUE(allowed(kEnd));
  ASSERT_TRUE(c.accept(4));   // "tc"
  EXPECT_TRUE(allowed(5));    // ">" completes the trigger: the body starts
  EXPECT_TRUE(allowed(13));   // "c>" does not ("<tcc>" is text)
  EXPECT_TRUE(allowed(kEnd));
  ASSERT_TRUE(c.accept(5));
  // Inside the body: digits only, no end.
  for (TokenId id = 0; id < index->vocab_size(); ++id) {
    const std::string& t = vocab[static_cast<size_t>(id)];
    EXPECT_EQ(allowed(id), t == "1" || t == "2") << t;
  }
  EXPECT_FALSE(c.accept(12));
  ASSERT_TRUE(c.accept(9));
  ASSERT_TRUE(c.accept(11));
  EXPECT_TRUE(c.must_end());
}

}  // namespace
}  // namespace vks::grammar
