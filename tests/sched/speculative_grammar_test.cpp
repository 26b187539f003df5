// Speculative decoding of grammar-constrained requests: a draft is cut before the first token the
// grammar refuses (and the grammar state it was checked against is left as it was), and on
// stories260K a JSON-schema request gives the same tokens with and without speculation, greedy and
// seeded sampled, alone and batched, while drafts are verified and accepted.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>

#include "engine/cpu/cpu_runner.h"
#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/token_constraint.h"
#include "engine/model/llama_model.h"
#include "engine/sched/draft_grammar.h"
#include "engine/sched/engine.h"
#include "tests/common/test_models.h"

namespace vks::test {
namespace {

using namespace std::chrono_literals;

TEST(DraftGrammar, CutsBeforeTheFirstRefusedToken) {
  const std::vector<std::string> vocab = {"</s>", "a", "b", "1", " "};
  auto index = std::make_shared<grammar::TokenIndex>(vocab, std::vector<TokenId>{0});
  auto g = std::make_shared<grammar::Grammar>(grammar::parse_gbnf("root ::= [ab]+ \"1\""));
  grammar::TokenConstraint constraint(g, index);
  ASSERT_TRUE(constraint.accept(1));  // "a" already generated
  const grammar::MatchState before = constraint.state();
  std::optional<grammar::TokenConstraint> probe;
  auto cut = [&](std::vector<int32_t> draft) {
    sched::cut_draft_to_grammar(constraint, probe, draft);
    return draft;
  };
  EXPECT_EQ(cut({2, 1, 4, 1}), (std::vector<int32_t>{2, 1}));  // " " refused after "aba"
  EXPECT_EQ(cut({3, 0, 1}), (std::vector<int32_t>{3, 0}));     // "1" then the end, nothing after it
  EXPECT_EQ(cut({0, 1}), (std::vector<int32_t>{}));            // the end before the "1"
  EXPECT_EQ(cut({3, 3}), (std::vector<int32_t>{3}));
  EXPECT_EQ(cut({}), (std::vector<int32_t>{}));
  EXPECT_EQ(constraint.state(), before) << "the request's own grammar state moved";
  EXPECT_FALSE(constraint.accept(0));
  EXPECT_TRUE(constraint.accept(2));
}

struct Results {
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::string> texts;
  std::vector<EngineEvent> finished;
};

class SpeculativeGrammar : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = LlamaModel::load(model_path("stories260K.gguf"));
    tok_ = Tokenizer::from_gguf(model_->file());
  }
  Results run(const std::vector<GenerateRequest>& reqs) {
    CpuRunnerOptions o;
    o.block_size = 16;
    o.num_blocks = 256;
    o.threads = 2;
    o.max_step_seqs = 32;
    EngineConfig cfg;
    cfg.max_seqs = 8;
    cfg.speculative_cost_model = false;  // verify every draft found
    Engine engine(std::make_unique<CpuRunner>(*model_, o), *tok_, cfg);
    std::vector<std::string> ids;
    for (const GenerateRequest& r : reqs) {
      const SubmitResult s = engine.submit(r);
      EXPECT_TRUE(s.ok) << s.message;
      ids.push_back(s.id);
    }
    std::map<std::string, std::vector<int32_t>> out;
    std::map<std::string, std::string> text;
    std::map<std::string, EngineEvent> done;
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (done.size() < ids.size() && std::chrono::steady_clock::now() < until) {
      std::vector<EngineEvent> ev;
      engine.poll_events(ev);
      for (const EngineEvent& e : ev) {
        for (const GeneratedToken& t : e.tokens) out[e.request_id].push_back(t.id);
        text[e.request_id] += e.text;
        if (e.type == EventType::kError) ADD_FAILURE() << e.error_message;
        if (e.type == EventType::kFinished) done[e.request_id] = e;
      }
      if (ev.empty()) std::this_thread::sleep_for(1ms);
    }
    Results r;
    for (const std::string& id : ids) {
      EXPECT_TRUE(done.count(id)) << "request " << id << " did not finish";
      r.ids.push_back(out[id]);
      r.texts.push_back(text[id]);
      r.finished.push_back(done[id]);
    }
    return r;
  }

  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(SpeculativeGrammar, JsonSchemaOutputEqualsPlainConstrainedDecoding) {
  // Arrays of objects repeat their keys: prompt lookup finds drafts in the output itself.
  const std::string schema = R"({"type":"array","minItems":3,"items":{"type":"object",
      "properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer"}},"required":["name","age"]}})";
  auto request = [&](const std::string& prompt, float temperature, uint64_t seed, int32_t speculative) {
    GenerateRequest r;
    r.prompt_ids = tok_->encode(prompt, true);
    r.json_schema = schema;
    r.sampling.temperature = temperature;
    r.sampling.seed = seed;
    r.stop.max_tokens = 80;
    r.logprobs = -1;
    r.speculative = speculative;
    return r;
  };
  const std::vector<std::string> prompts = {"Once upon a time", "Tom and Lily", "The cat"};
  std::vector<GenerateRequest> plain, spec;
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (float t : {0.0f, 0.8f}) {
      plain.push_back(request(prompts[i], t, 10 + i, 0));
      spec.push_back(request(prompts[i], t, 10 + i, 6));
    }
  }
  const Results want = run(plain);
  const Results got = run(spec);
  const Results alone = run({spec[0]});
  const auto gbnf = grammar::parse_gbnf(grammar::json_schema_text_to_gbnf(schema));
  int64_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < spec.size(); ++i) {
    EXPECT_EQ(got.ids[i], want.ids[i]) << "request " << i << ": " << want.texts[i];
    EXPECT_EQ(got.texts[i], want.texts[i]);
    EXPECT_EQ(want.finished[i].timings.draft_tokens, 0);
    if (got.finished[i].reason == FinishReason::kStop) {
      EXPECT_TRUE(grammar::matches_completely(gbnf, got.texts[i])) << got.texts[i];
    }
    drafted += got.finished[i].timings.draft_tokens;
    accepted += got.finished[i].timings.accepted_tokens;
  }
  EXPECT_EQ(alone.ids[0], want.ids[0]);
  EXPECT_GT(accepted, 0) << "no draft was accepted";
  EXPECT_GT(drafted, accepted) << "no draft was rejected";
}

}  // namespace
}  // namespace vks::test
