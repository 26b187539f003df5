// Reasoning blocks: the markers learnt from templates (Qwen3's from the reference set, a
// DeepSeek-R1-style template that opens the block in its generation prompt, templates that do
// not think), and the incremental split: every way of cutting an answer into pieces gives what
// the whole answer gives.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <random>
#include <string>

#include "engine/chat/reasoning.h"
#include "tests/common/test_models.h"

namespace vks::chat {
namespace {

// The Qwen3 template of the reference set (chat-templates.json), or "" when the file is absent.
std::string qwen3_template() {
  std::ifstream in(test::models_dir() + "/reference/chat-templates.json");
  if (!in) return {};
  const nlohmann::json all = nlohmann::json::parse(in);
  for (const auto& entry : all) {
    if (entry.at("template_name") == "qwen3") return entry.at("template").get<std::string>();
  }
  return {};
}

ReasoningFormat think_format(bool starts_inside = false) {
  ReasoningFormat f;
  f.open = "<think>";
  f.close = "</think>";
  f.starts_inside = starts_inside;
  return f;
}

ReasoningSplit whole(const ReasoningFormat& f, const std::string& text) {
  ReasoningParser p(f);
  ReasoningSplit out;
  p.feed(text, out);
  p.finish(out);
  return out;
}

TEST(Reasoning, FormatsFromTemplates) {
  const std::string qwen3 = qwen3_template();
  if (qwen3.empty()) GTEST_SKIP() << "no reference/chat-templates.json under " << test::models_dir();
  const ReasoningFormat q = detect_reasoning_format(ChatTemplate::parse(qwen3, std::nullopt, "<|im_end|>"));
  EXPECT_EQ(q.open, "<think>");
  EXPECT_EQ(q.close, "</think>");
  EXPECT_TRUE(q.has_switch);
  EXPECT_FALSE(q.starts_inside);  // Qwen3 lets the model open the block

  // DeepSeek-R1 (newer templates): the generation prompt ends with "<think>\n".
  const ChatTemplate r1 = ChatTemplate::parse(
      "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
      "{% if add_generation_prompt %}Assistant: <think>\n{% endif %}{# answers end with </think> #}",
      std::nullopt, std::nullopt);
  const ReasoningFormat d = detect_reasoning_format(r1);
  EXPECT_TRUE(d.thinks());
  EXPECT_TRUE(d.starts_inside);
  EXPECT_FALSE(d.has_switch);

  EXPECT_FALSE(detect_reasoning_format(ChatTemplate::chatml(std::nullopt, std::nullopt)).thinks());
  // Only one of the markers: not a reasoning template.
  EXPECT_FALSE(detect_reasoning_format(ChatTemplate::parse("{{ '<think>' }}{{ messages[0].content }}", std::nullopt,
                                                           std::nullopt)).thinks());
}

TEST(Reasoning, SplitsALeadingBlock) {
  const ReasoningFormat f = think_format();
  EXPECT_EQ(whole(f, "<think>\nLet me see.\n</think>\n\nParis."), (ReasoningSplit{"\nLet me see.\n", "Paris."}));
  EXPECT_EQ(whole(f, "  \n<think>a</think>b"), (ReasoningSplit{"a", "b"}));
  // Text first: the model did not think, a later block is content.
  EXPECT_EQ(whole(f, "Hi <think>a</think>b"), (ReasoningSplit{"", "Hi <think>a</think>b"}));
  EXPECT_EQ(whole(f, "<thin"), (ReasoningSplit{"", "<thin"}));       // a partial marker at the end
  EXPECT_EQ(whole(f, "<thinking>"), (ReasoningSplit{"", "<thinking>"}));
  EXPECT_EQ(whole(f, "<think>cut off </thi"), (ReasoningSplit{"cut off </thi", ""}));  // cut inside
  EXPECT_EQ(whole(f, "<think></think>"), (ReasoningSplit{"", ""}));
  EXPECT_EQ(whole(f, "<think>a <</think>b</think>"), (ReasoningSplit{"a <", "b</think>"}));
  EXPECT_EQ(whole(f, ""), (ReasoningSplit{"", ""}));
  // The generation prompt opened the block: the answer starts inside it.
  EXPECT_EQ(whole(think_format(true), "Hmm.</think>\nYes."), (ReasoningSplit{"Hmm.", "Yes."}));
  // No reasoning format: all content, untouched.
  EXPECT_EQ(whole(ReasoningFormat{}, "<think>a</think>b"), (ReasoningSplit{"", "<think>a</think>b"}));
}

// Every split point, and random piece sizes down to single bytes, give the whole answer's split.
// The request's switch reaches the parser only through a template that reads it.
TEST(Reasoning, AnswerParserFollowsTheSwitchWhereTheTemplateReadsIt) {
  EXPECT_FALSE(answer_reasoning_parser(ReasoningFormat{}, std::nullopt).has_value());  // does not think
  EXPECT_FALSE(answer_reasoning_parser(ReasoningFormat{}, true).has_value());
  ReasoningFormat with_switch = think_format(/*starts_inside=*/true);
  with_switch.has_switch = true;
  const ReasoningFormat without_switch = think_format(/*starts_inside=*/true);
  auto split = [](std::optional<ReasoningParser> p, const std::string& text) {
    ReasoningSplit out;
    p->feed(text, out);
    p->finish(out);
    return out;
  };
  const ReasoningSplit inside{"plan", "x"}, outside{"", "plan</think>x"};
  EXPECT_EQ(split(answer_reasoning_parser(with_switch, false), "plan</think>x"), outside);
  EXPECT_EQ(split(answer_reasoning_parser(with_switch, true), "plan</think>x"), inside);
  EXPECT_EQ(split(answer_reasoning_parser(with_switch, std::nullopt), "plan</think>x"), inside);
  EXPECT_EQ(split(answer_reasoning_parser(without_switch, false), "plan</think>x"), inside);
}

TEST(Reasoning, AnyPiecesGiveTheWholeSplit) {
  const std::vector<std::string> answers = {
      "<think>\nLet me see: 2 < 3 and </th is not a close.\n</think>\n\nParis, 24 C.",
      " \n<think>x</think>", "<think>never closed <", "Plain answer <think>not reasoning</think>", "<th", "",
      "</think> at the start", "<think></think></think>"};
  std::mt19937 rng(7);
  for (const bool inside : {false, true}) {
    const ReasoningFormat f = think_format(inside);
    for (const std::string& answer : answers) {
      const ReasoningSplit expected = whole(f, answer);
      for (size_t cut = 0; cut <= answer.size(); ++cut) {
        ReasoningParser p(f);
        ReasoningSplit got;
        p.feed(std::string_view(answer).substr(0, cut), got);
        p.feed(std::string_view(answer).substr(cut), got);
        p.finish(got);
        EXPECT_EQ(got, expected) << "cut at " << cut << " of '" << answer << "'";
      }
      for (int round = 0; round < 20; ++round) {
        ReasoningParser p(f);
        ReasoningSplit got;
        for (size_t at = 0; at < answer.size();) {
          const size_t n = std::min(answer.size() - at, static_cast<size_t>(rng() % 4));
          p.feed(std::string_view(answer).substr(at, n), got);
          at += n;
        }
        p.finish(got);
        EXPECT_EQ(got, expected) << "random pieces of '" << answer << "'";
      }
    }
  }
}

// Random bytes never crash the parser, and nothing is lost: reasoning + content keep every byte
// except the markers and the whitespace around a block.
TEST(Reasoning, RandomInputNeverCrashesNorInventsBytes) {
  std::mt19937 rng(11);
  const std::string alphabet = "<>/thinke \n";
  for (int round = 0; round < 2000; ++round) {
    std::string s;
    const size_t n = rng() % 40;
    for (size_t i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    const ReasoningSplit got = whole(think_format(round % 2 == 1), s);
    EXPECT_LE(got.reasoning.size() + got.content.size(), s.size());
  }
}

}  // namespace
}  // namespace vks::chat
