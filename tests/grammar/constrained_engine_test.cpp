// Grammar-constrained generation through the Engine on stories260K (CPU runner): outputs follow
// the grammar, EOS only where the grammar can end, greedy output is the same alone and batched,
// stop strings / max_tokens / cancel still work, bad grammars are rejected at submit.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/json_schema.h"
#include "tests/grammar/constrained_run.h"

namespace vks::test {
namespace {

std::string read_data(const std::string& name) {
  std::ifstream f(std::string(VKS_GRAMMAR_DATA) + "/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* kSchema = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":12},
  "age":{"type":"integer","minimum":0,"maximum":120},
  "tags":{"type":"array","items":{"enum":["red","green","blue"]},"maxItems":3},
  "pet":{"anyOf":[{"type":"null"},{"type":"object","properties":{"kind":{"const":"cat"}},"required":["kind"]}]}},
  "required":["name","age","pet"],"additionalProperties":false})";

class ConstrainedEngine : public ::testing::Test {
 protected:
  static ModelFixture& fixture() {
    static ModelFixture f;
    return f;
  }
};

TEST_F(ConstrainedEngine, JsonSchemaGreedySameAloneAndBatched) {
  auto engine = fixture().engine();
  GenerateRequest r = constrained("Once upon a time", 0.0f, 200, 1);
  r.json_schema = kSchema;
  const Outcome alone = fixture().run(*engine, {r})[0];
  ASSERT_EQ(alone.reason, FinishReason::kStop) << alone.error << " text: " << alone.text;
  const auto doc = nlohmann::json::parse(alone.text);
  EXPECT_TRUE(doc.contains("name") && doc.contains("age") && doc.contains("pet")) << alone.text;
  EXPECT_TRUE(grammar::matches_completely(grammar::parse_gbnf(grammar::json_schema_text_to_gbnf(kSchema)), alone.text));

  // Batched with unconstrained and other constrained requests (sampled and greedy).
  std::vector<GenerateRequest> batch;
  for (int i = 0; i < 6; ++i) {
    GenerateRequest other = constrained("Lily went to the park", i % 2 ? 0.8f : 0.0f, 40, 100 + i);
    if (i % 3 == 0) other.json_schema = R"({"type":"array","items":{"type":"integer"}})";
    batch.push_back(other);
    if (i == 2) batch.push_back(r);
  }
  const auto outs = fixture().run(*engine, batch);
  EXPECT_EQ(outs[3].ids, alone.ids);
  EXPECT_EQ(outs[3].text, alone.text);
}

TEST_F(ConstrainedEngine, LlamaCppGrammarsSampled) {
  auto engine = fixture().engine();
  std::vector<GenerateRequest> reqs;
  const std::vector<std::string> files = {"arithmetic.gbnf", "list.gbnf", "chess.gbnf", "json.gbnf"};
  for (size_t f = 0; f < files.size(); ++f) {
    for (uint64_t seed = 0; seed < 4; ++seed) {
      GenerateRequest r = constrained("Once upon a time", 0.9f, 120, seed);
      r.grammar = read_data(files[f]);
      reqs.push_back(r);
    }
  }
  const auto outs = fixture().run(*engine, reqs);
  int finished = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto g = grammar::parse_gbnf(reqs[i].grammar);
    EXPECT_TRUE(outs[i].error.empty()) << outs[i].error;
    if (outs[i].reason == FinishReason::kStop) {
      ++finished;
      EXPECT_TRUE(grammar::matches_completely(g, outs[i].text)) << files[i / 4] << ": " << outs[i].text;
    } else {
      EXPECT_EQ(outs[i].reason, FinishReason::kLength);
      grammar::GrammarMatcher m(std::make_shared<grammar::Grammar>(g));
      EXPECT_TRUE(m.accept(outs[i].text)) << files[i / 4] << " prefix: " << outs[i].text;
    }
  }
  RecordProperty("finished", finished);
}

TEST_F(ConstrainedEngine, EosOnlyWhereTheGrammarCanEnd) {
  auto engine = fixture().engine();
  GenerateRequest r = constrained("Once upon a time", 0.0f, 60, 1);
  r.grammar = "root ::= \" The end\" | \" Once upon a time, there was\"\n";
  const Outcome o = fixture().run(*engine, {r})[0];
  EXPECT_EQ(o.reason, FinishReason::kStop) << o.error;
  EXPECT_TRUE(o.text == " The end" || o.text == " Once upon a time, there was") << o.text;
  EXPECT_EQ(o.ids.back(), fixture().tokenizer().eos());
}

TEST_F(ConstrainedEngine, StopStringsMaxTokensAndCancel) {
  auto engine = fixture().engine();
  GenerateRequest stop = constrained("Once upon a time", 0.0f, 100, 1);
  stop.grammar = "root ::= [a-z ]+ \".\"\n";
  GenerateRequest baseline = stop;
  const Outcome full = fixture().run(*engine, {baseline})[0];
  ASSERT_GT(full.text.size(), 4u) << full.error;
  stop.stop.stop_strings = {full.text.substr(2, 2)};
  const Outcome stopped = fixture().run(*engine, {stop})[0];
  EXPECT_EQ(stopped.reason, FinishReason::kStop);
  EXPECT_EQ(stopped.text, full.text.substr(0, 2));

  GenerateRequest longer = constrained("Once upon a time", 0.0f, 3, 1);
  longer.json_schema = R"({"type":"array","items":{"type":"string"}})";
  const Outcome cut = fixture().run(*engine, {longer})[0];
  EXPECT_EQ(cut.reason, FinishReason::kLength);
  EXPECT_EQ(cut.ids.size(), 3u);

  GenerateRequest endless = constrained("Once upon a time", 0.0f, 100000, 1);
  endless.grammar = "root ::= \"a\"+\n";
  endless.stop.max_tokens = 500;
  SubmitResult s = engine->submit(endless);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_TRUE(engine->cancel(s.id));
  bool cancelled = false;
  for (int i = 0; i < 5000 && !cancelled; ++i) {
    std::vector<EngineEvent> ev;
    engine->poll_events(ev);
    for (const auto& e : ev) cancelled = cancelled || (e.type == EventType::kFinished && e.reason == FinishReason::kCancelled);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(cancelled);
}

TEST_F(ConstrainedEngine, PreparedOffThreadEqualsCompiledAtSubmit) {
  auto engine = fixture().engine();
  GenerateRequest r = constrained("Once upon a time", 0.0f, 100, 1);
  r.json_schema = kSchema;
  GenerateRequest prepared = r;
  std::string error;
  std::thread worker([&] { EXPECT_TRUE(engine->prepare_constraint(prepared, error)) << error; });
  worker.join();
  ASSERT_NE(prepared.compiled_constraint, nullptr);
  const auto outs = fixture().run(*engine, {r, prepared});
  EXPECT_EQ(outs[0].text, outs[1].text);
  GenerateRequest bad = r;
  bad.json_schema = R"({"type": "integer", "minimum": 5, "maximum": 1})";
  EXPECT_FALSE(engine->prepare_constraint(bad, error));
  EXPECT_NE(error.find("json_schema"), std::string::npos) << error;
}

// Sequential requests with the same schema (an agent's turns with the same tools) share one table
// even after the previous request let go of it: its states and masks are not rebuilt. The engine
// keeps its 4 most recently used tables; older ones go when their last request does.
TEST_F(ConstrainedEngine, RecentlyUsedTablesOutliveTheirRequests) {
  auto engine = fixture().engine();
  GenerateRequest r = constrained("Once", 0.0f, 10, 1);
  r.json_schema = kSchema;
  std::string error;
  std::weak_ptr<grammar::GrammarTable> first;
  {
    GenerateRequest turn = r;
    ASSERT_TRUE(engine->prepare_constraint(turn, error)) << error;
    first = turn.compiled_constraint;
  }
  ASSERT_FALSE(first.expired()) << "the table went with its request";
  GenerateRequest next = r;
  ASSERT_TRUE(engine->prepare_constraint(next, error)) << error;
  EXPECT_EQ(next.compiled_constraint, first.lock());
  next.compiled_constraint.reset();
  for (int i = 0; i < 4; ++i) {  // four other schemas push it out
    GenerateRequest other = r;
    other.json_schema = R"({"type": "array", "maxItems": )" + std::to_string(i + 1) + "}";
    ASSERT_TRUE(engine->prepare_constraint(other, error)) << error;
  }
  EXPECT_TRUE(first.expired());
}

TEST_F(ConstrainedEngine, BadConstraintsRejectedAtSubmitWithPosition) {
  auto engine = fixture().engine();
  GenerateRequest r = constrained("Once", 0.0f, 10, 1);
  r.grammar = "root ::= \"a\"\nitem ::= [z-a]\n";
  SubmitResult s = engine->submit(r);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message.find("grammar: line 2, column 11"), std::string::npos) << s.message;
  r.grammar.clear();
  r.json_schema = R"({"type": "object", "properties": {"a": {"not": {}}}})";
  s = engine->submit(r);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("json_schema"), std::string::npos) << s.message;
  r.json_schema = "{\"type\": ";
  s = engine->submit(r);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("offset"), std::string::npos) << s.message;
  r.grammar = "root ::= \"a\"\n";
  s = engine->submit(r);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("at most one"), std::string::npos) << s.message;
  // min_tokens beyond what the grammar can produce: a clear error, not a hang or a wrong token.
  GenerateRequest tight = constrained("Once", 0.0f, 10, 1);
  tight.grammar = "root ::= \"a\"\n";
  tight.stop.min_tokens = 5;
  const Outcome o = fixture().run(*engine, {tight})[0];
  EXPECT_EQ(o.reason, FinishReason::kError);
  EXPECT_NE(o.error.find("grammar"), std::string::npos) << o.error;
}

}  // namespace
}  // namespace vks::test
