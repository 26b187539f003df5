// OpenAI's n > 1 (server/http/choice_group.h): the count's limits, the seeds of the choices, and
// the answer put together from one-choice answers (choices by index, usage counting the prompt once).
#include <gtest/gtest.h>

#include <set>

#include "server/http/choice_group.h"

namespace vks::http {
namespace {

using nlohmann::json;

TEST(ChoiceGroup, ChoiceCountIsAnInteger1To16) {
  int32_t n = 0;
  EXPECT_FALSE(read_choice_count(JsonBody::object(), n));
  EXPECT_EQ(n, 1);
  EXPECT_FALSE(read_choice_count(JsonBody::parse(R"({"n":null})"), n));
  EXPECT_EQ(n, 1);
  EXPECT_FALSE(read_choice_count(JsonBody::parse(R"({"n":16})"), n));
  EXPECT_EQ(n, 16);
  for (const char* bad : {R"({"n":0})", R"({"n":17})", R"({"n":-2})", R"({"n":2.5})", R"({"n":"2"})", R"({"n":true})"}) {
    auto e = read_choice_count(JsonBody::parse(bad), n);
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->status, 400) << bad;
    EXPECT_EQ(e->param, "n") << bad;
  }
}

TEST(ChoiceGroup, LaterChoicesGetDistinctSeedsDerivedFromTheRequestsSeed) {
  const json wire = {{"prompt", "x"}, {"seed", 42}};
  EXPECT_EQ(choice_wire(wire, 0), wire);  // choice 0 is the request as sent
  std::set<uint64_t> seeds = {42};
  for (int32_t i = 1; i < kMaxChoices; ++i) {
    const json w = choice_wire(wire, i);
    EXPECT_EQ(w["prompt"], "x");
    EXPECT_EQ(w["seed"], choice_wire(wire, i)["seed"]) << "deterministic";
    seeds.insert(w["seed"].get<uint64_t>());
  }
  EXPECT_EQ(seeds.size(), static_cast<size_t>(kMaxChoices));
  // Choice 1 of seed 42 is not choice 0 of a nearby seed.
  EXPECT_NE(choice_wire(wire, 1)["seed"].get<uint64_t>(), 43u);
  EXPECT_NE(choice_wire(wire, 1)["seed"], choice_wire(json{{"seed", 43}}, 1)["seed"]);
  // Without a seed, or with one the wire refuses, the wire is left as it is.
  EXPECT_EQ(choice_wire(json{{"prompt", "x"}}, 2), json({{"prompt", "x"}}));
  EXPECT_EQ(choice_wire(json{{"seed", -1}}, 2), json({{"seed", -1}}));
}

json one_choice(int32_t index, const std::string& text, int completion, int cached) {
  return {{"id", "cmpl-" + std::to_string(index)},
          {"object", "text_completion"},
          {"choices", json::array({{{"index", index}, {"text", text}, {"finish_reason", "length"}}})},
          {"usage", {{"prompt_tokens", 10}, {"completion_tokens", completion}, {"total_tokens", 10 + completion},
                     {"prompt_tokens_details", {{"cached_tokens", cached}}}}}};
}

TEST(ChoiceGroup, TheAnswerHasEveryChoiceInIndexOrderAndThePromptCountedOnce) {
  ChoiceGroup group;
  group.n = 3;
  // Finished out of order; choice 0's answer gives the id, its usage the prompt.
  add_finished_choice(group, 2, one_choice(2, "c", 5, 8)["usage"], one_choice(2, "c", 5, 8));
  EXPECT_FALSE(all_choices_finished(group));
  add_finished_choice(group, 0, one_choice(0, "a", 3, 0)["usage"], one_choice(0, "a", 3, 0));
  EXPECT_FALSE(all_choices_finished(group));
  add_finished_choice(group, 1, one_choice(1, "b", 4, 8)["usage"], one_choice(1, "b", 4, 8));
  ASSERT_TRUE(all_choices_finished(group));
  const json answer = group_answer(group);
  EXPECT_EQ(answer["id"], "cmpl-0");
  ASSERT_EQ(answer["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(answer["choices"][i]["index"], i);
    EXPECT_EQ(answer["choices"][i]["text"], std::string(1, static_cast<char>('a' + i)));
  }
  EXPECT_EQ(answer["usage"]["prompt_tokens"], 10);
  EXPECT_EQ(answer["usage"]["completion_tokens"], 12);
  EXPECT_EQ(answer["usage"]["total_tokens"], 22);
  EXPECT_EQ(answer["usage"]["prompt_tokens_details"]["cached_tokens"], 0);  // choice 0's: the prompt once
  EXPECT_FALSE(answer["usage"].contains("completion_tokens_details"));
}

TEST(ChoiceGroup, ReasoningTokensAddUpWhenTheChoicesCountThem) {
  ChoiceGroup group;
  group.n = 2;
  add_finished_choice(group, 0, {{"prompt_tokens", 7}, {"completion_tokens", 9}, {"completion_tokens_details", {{"reasoning_tokens", 4}}}});
  add_finished_choice(group, 1, {{"prompt_tokens", 7}, {"completion_tokens", 6}, {"completion_tokens_details", {{"reasoning_tokens", 2}}}});
  const json usage = group_usage(group);
  EXPECT_EQ(usage["prompt_tokens"], 7);
  EXPECT_EQ(usage["completion_tokens"], 15);
  EXPECT_EQ(usage["total_tokens"], 22);
  EXPECT_EQ(usage["completion_tokens_details"]["reasoning_tokens"], 6);
}

}  // namespace
}  // namespace vks::http
