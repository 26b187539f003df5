// Speculative decoding with a draft model (model_drafter.h) never changes a token: on the CPU
// runner (and on Vulkan: sched_draft_model_vulkan_test), greedy ids with a draft model equal plain
// decoding's alone, batched, across preemptions and prefix-cache hits, with fewer draft slots than
// sequences, and a constrained request drafts within its grammar; a draft model equal to the target
// (stories260K for itself) has every draft accepted, a different one of the same vocabulary
// (kquant-q2_k drafting for kquant-q6_k) has some rejected; a seeded sampled request
// gives its plain tokens; a draft model with another vocabulary size is refused by the engine; the
// draft model does not run when no step can verify a draft.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>

#include "engine/common/error.h"
#include "tests/sched/model_test_runner.h"
#ifdef VKS_SCHED_TEST_VULKAN
#include "tests/common/vulkan_skip.h"
#endif
#include "engine/model/llama_model.h"
#include "engine/sched/drafter.h"
#include "engine/sched/engine.h"
#include "tests/common/test_models.h"
#include "tests/sched/fakes.h"

namespace vks::test {
namespace {

using namespace std::chrono_literals;

struct Outcome {
  std::vector<std::vector<int32_t>> ids;
  std::vector<EngineEvent> finished;
  EngineStats stats;
};

class DraftModel : public ::testing::Test {
 protected:
  void SetUp() override {
    stories_ = LlamaModel::load(model_path("stories260K.gguf"));
    tok_ = Tokenizer::from_gguf(stories_->file());
#ifdef VKS_SCHED_TEST_VULKAN
    try {
      model_test_runner(*stories_, 8);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kDevice) throw;
      VKS_SKIP_WITHOUT_VULKAN(e.what());
    }
#endif
  }
  Outcome run(std::unique_ptr<ModelRunner> target, std::unique_ptr<ModelRunner> draft,
              const std::vector<GenerateRequest>& reqs, int32_t max_seqs = 8) {
    EngineConfig cfg;
    cfg.max_seqs = max_seqs;
    cfg.speculative_cost_model = false;  // verify every draft
    Engine engine(std::move(target), *tok_, cfg, std::move(draft));
    std::vector<std::string> ids;
    for (const GenerateRequest& r : reqs) {
      const SubmitResult s = engine.submit(r);
      EXPECT_TRUE(s.ok) << s.message;
      ids.push_back(s.id);
    }
    std::map<std::string, std::vector<int32_t>> out;
    std::map<std::string, EngineEvent> done;
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (done.size() < ids.size() && std::chrono::steady_clock::now() < until) {
      std::vector<EngineEvent> ev;
      engine.poll_events(ev);
      for (const EngineEvent& e : ev) {
        for (const GeneratedToken& t : e.tokens) out[e.request_id].push_back(t.id);
        if (e.type == EventType::kError) ADD_FAILURE() << e.error_message;
        if (e.type == EventType::kFinished) done[e.request_id] = e;
      }
      if (ev.empty()) std::this_thread::sleep_for(1ms);
    }
    Outcome o;
    o.stats = engine.stats();
    for (const std::string& id : ids) {
      EXPECT_TRUE(done.count(id)) << "request " << id << " did not finish";
      o.ids.push_back(out[id]);
      o.finished.push_back(done[id]);
    }
    return o;
  }
  GenerateRequest request(const std::string& prompt, int32_t max_tokens, int32_t speculative) const {
    GenerateRequest r;
    r.prompt_ids = tok_->encode(prompt, true);
    r.sampling.temperature = 0;
    r.stop.max_tokens = max_tokens;
    r.stop.ignore_eos = true;
    r.logprobs = -1;
    r.speculative = speculative;
    return r;
  }
  std::vector<GenerateRequest> requests(int32_t n, int32_t speculative) const {
    const std::vector<std::string> prompts = {"Once upon a time", "Tom and Lily went", "The cat sat on the",
                                              "Lily had a red ball"};
    std::vector<GenerateRequest> reqs;
    for (int32_t i = 0; i < n; ++i) {
      reqs.push_back(request(prompts[static_cast<size_t>(i) % prompts.size()], 30 + i, speculative));
    }
    return reqs;
  }

  std::unique_ptr<LlamaModel> stories_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(DraftModel, TheTargetAsItsOwnDraftIsAlwaysAcceptedAndExact) {
  const Outcome plain = run(model_test_runner(*stories_, 512), nullptr, requests(6, 0));
  const Outcome alone = run(model_test_runner(*stories_, 512), model_test_runner(*stories_, 512), {requests(1, 4)[0]});
  const Outcome batched = run(model_test_runner(*stories_, 512), model_test_runner(*stories_, 512), requests(6, 4));
  EXPECT_EQ(alone.ids[0], plain.ids[0]);
  for (size_t i = 0; i < plain.ids.size(); ++i) EXPECT_EQ(batched.ids[i], plain.ids[i]) << "request " << i;
  EXPECT_GT(batched.stats.draft_tokens, 0);
  EXPECT_EQ(batched.stats.accepted_tokens, batched.stats.draft_tokens) << "a draft equal to the target was rejected";
  EXPECT_EQ(alone.stats.accepted_tokens, alone.stats.draft_tokens);
  EXPECT_LT(alone.stats.steps, 30 / 2) << "4 drafts accepted per step should take ~30/5 steps";
  EXPECT_EQ(batched.stats.kv_blocks_used, 0);
}

TEST_F(DraftModel, AnotherDraftModelIsExactAcrossPreemptionAndFewSlots) {
  // The same synthetic model quantized two ways: mostly the same greedy tokens, not always.
  auto target = LlamaModel::load(model_path("kquant-q6_k.gguf"));
  auto small_draft = LlamaModel::load(model_path("kquant-q2_k.gguf"));
  const std::vector<GenerateRequest> plain_reqs = requests(8, 0), spec_reqs = requests(8, 4);
  const Outcome plain = run(model_test_runner(*target, 512), nullptr, plain_reqs);
  const Outcome spec = run(model_test_runner(*target, 512), model_test_runner(*small_draft, 512), spec_reqs);
  // 24 target blocks of 4 for 8 sequences of up to ~45 tokens: preemptions with drafts in flight.
  const Outcome small = run(model_test_runner(*target, 24), model_test_runner(*small_draft, 512), spec_reqs);
  // 64 draft blocks: 8 slots of 32 tokens, shorter than the sequences (drafting stops where a
  // slot is full); 16 sequences per step for 8 slots: slots change hands.
  const Outcome few = run(model_test_runner(*target, 512), model_test_runner(*small_draft, 64), requests(16, 4), 16);
  const Outcome few_plain = run(model_test_runner(*target, 512), nullptr, requests(16, 0), 16);
  for (size_t i = 0; i < plain.ids.size(); ++i) {
    EXPECT_EQ(spec.ids[i], plain.ids[i]) << "request " << i;
    EXPECT_EQ(small.ids[i], plain.ids[i]) << "request " << i << " with preemptions";
  }
  for (size_t i = 0; i < few.ids.size(); ++i) EXPECT_EQ(few.ids[i], few_plain.ids[i]) << "request " << i;
  EXPECT_GT(small.stats.preemptions, 0);
  EXPECT_GT(spec.stats.accepted_tokens, 0);
  EXPECT_GT(spec.stats.draft_tokens, spec.stats.accepted_tokens) << "no draft was rejected";
  EXPECT_GT(small.stats.draft_tokens, 0);
  EXPECT_GT(few.stats.draft_tokens, 0);
  EXPECT_EQ(small.stats.kv_blocks_used, 0);

  // A prefix-cache hit: the second request starts from the first's cached blocks.
  const GenerateRequest again = request("Once upon a time there was a", 20, 4);
  const Outcome cached = run(model_test_runner(*target, 512), model_test_runner(*small_draft, 512), {again, again}, 1);
  const Outcome cached_plain =
      run(model_test_runner(*target, 512), nullptr, {request("Once upon a time there was a", 20, 0)});
  EXPECT_GT(cached.finished[1].usage.cached_tokens, 0);
  EXPECT_EQ(cached.ids[0], cached_plain.ids[0]);
  EXPECT_EQ(cached.ids[1], cached_plain.ids[0]);
}

TEST_F(DraftModel, SeededSamplingKeepsItsPlainTokens) {
  std::vector<GenerateRequest> plain, spec;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    GenerateRequest r = request("Once upon a time", 30, 0);
    r.sampling.temperature = 0.8f;
    r.sampling.seed = seed;
    plain.push_back(r);
    r.speculative = 4;
    spec.push_back(r);
  }
  const Outcome a = run(model_test_runner(*stories_, 512), nullptr, plain);
  const Outcome b = run(model_test_runner(*stories_, 512), model_test_runner(*stories_, 512), spec);
  for (size_t i = 0; i < a.ids.size(); ++i) EXPECT_EQ(b.ids[i], a.ids[i]) << "seed " << i + 1;
  EXPECT_GT(b.stats.accepted_tokens, 0);
  EXPECT_GT(b.stats.draft_tokens, b.stats.accepted_tokens) << "sampling rejected no draft";
}

// A grammar-constrained request drafts within its grammar: the draft model picks the best token
// the grammar allows, so the target drafting for itself has every draft accepted even where the
// grammar forces text the model would not write (its unconstrained pick, refused, would cut each
// draft to nothing), and the answer is plain constrained decoding's, alone and batched.
TEST_F(DraftModel, ConstrainedRequestsDraftWithinTheirGrammar) {
  auto constrained = [&](const std::string& prompt, int32_t speculative) {
    GenerateRequest r = request(prompt, 80, speculative);
    r.grammar = "root ::= \" the purple robot sang to the moon and the stars every night\" [.!]\n";
    r.stop.ignore_eos = false;  // the answer ends where the grammar does
    return r;
  };
  const std::vector<std::string> prompts = {"Once upon a time", "Tom and Lily went", "The cat sat on the"};
  std::vector<GenerateRequest> plain_reqs, spec_reqs;
  for (const std::string& p : prompts) {
    plain_reqs.push_back(constrained(p, 0));
    spec_reqs.push_back(constrained(p, 4));
  }
  const Outcome plain = run(model_test_runner(*stories_, 512), nullptr, plain_reqs);
  const Outcome alone = run(model_test_runner(*stories_, 512), model_test_runner(*stories_, 512), {spec_reqs[0]});
  const Outcome batched = run(model_test_runner(*stories_, 512), model_test_runner(*stories_, 512), spec_reqs);
  EXPECT_EQ(alone.ids[0], plain.ids[0]);
  for (size_t i = 0; i < plain.ids.size(); ++i) EXPECT_EQ(batched.ids[i], plain.ids[i]) << "request " << i;
  EXPECT_NE(tok_->decode(plain.ids[0]).find("the purple robot sang"), std::string::npos);
  const auto generated = static_cast<int64_t>(plain.ids[0].size());
  ASSERT_GT(generated, 12);
  EXPECT_EQ(alone.stats.accepted_tokens, alone.stats.draft_tokens);
  EXPECT_GT(alone.stats.draft_tokens, generated / 2) << "drafts were cut where the model's own pick was refused";
  EXPECT_EQ(batched.stats.accepted_tokens, batched.stats.draft_tokens);
}

// Plain greedy decoding of n tokens after `tokens` on a fresh runner: the reference a draft of
// the target by itself must equal.
std::vector<int32_t> greedy_after(const LlamaModel& m, const std::vector<int32_t>& tokens, int32_t n) {
  const std::unique_ptr<ModelRunner> r = model_test_runner(m, 64);
  std::vector<int32_t> out, next = tokens;
  int32_t n_past = 0;
  for (int32_t i = 0; i < n; ++i) {
    StepBatch b;
    b.tokens = next;
    SeqChunk c;
    c.n_tokens = static_cast<int32_t>(next.size());
    c.n_past = n_past;
    for (int32_t k = 0; k < 64; ++k) c.block_table.push_back(k);
    c.logits = LogitsMode::kArgmax;
    b.seqs = {c};
    b.finalize(r->block_size());
    StepResult res;
    r->step(b, res);
    n_past += c.n_tokens;
    out.push_back(res.argmax[0]);
    next = {res.argmax[0]};
  }
  return out;
}

// The drafter's own K/V follow each sequence: after a rejected draft, a preemption-like rewrite
// or a slot taken over by another sequence, its draft is still exactly the greedy continuation of
// the sequence's tokens now (stale K/V past the common prefix would change it).
TEST_F(DraftModel, DraftsFollowRejectionsAndSlotTakeovers) {
  auto drafter = sched::make_model_drafter(model_test_runner(*stories_, 64), 2);  // 2 slots of 128 tokens
  sched::Sequence a, b, c;
  a.tokens = tok_->encode("Once upon a time", true);
  b.tokens = tok_->encode("Tom and Lily went to the park", true);
  c.tokens = tok_->encode("The cat sat", true);
  auto check = [&](std::vector<sched::Sequence*> seqs, const char* when) {
    std::vector<sched::DraftJob> jobs;
    for (sched::Sequence* s : seqs) jobs.push_back({s, 4});
    drafter->draft(jobs);
    for (sched::Sequence* s : seqs) EXPECT_EQ(s->draft, greedy_after(*stories_, s->tokens, 4)) << when;
  };
  check({&a, &b}, "first drafts");
  // a accepts two draft tokens and then gets another token (a rejection); b accepts all four.
  const std::vector<int32_t> da = a.draft, db = b.draft;
  a.tokens.insert(a.tokens.end(), {da[0], da[1], da[2] == 5 ? 6 : 5});
  b.tokens.insert(b.tokens.end(), db.begin(), db.end());
  check({&a, &b}, "after a rejection");
  // c takes over the least recently used slot (both were used: one at a time now).
  check({&c}, "c in a's or b's slot");
  check({&a}, "a back");
  check({&b}, "b back");
  // A rewritten history (another token early on) rolls back to the common prefix.
  a.tokens[3] = a.tokens[3] == 7 ? 8 : 7;
  check({&a, &c}, "a rewritten");
}

// A greedy request continuing "abcabcabc" for max_tokens, drafting up to 4 tokens a step.
GenerateRequest abc_speculative(const FakeTokenizer& tok, int32_t max_tokens) {
  GenerateRequest r;
  r.prompt_ids = tok.encode("abcabcabc", true);
  r.sampling.temperature = 0;
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = true;
  r.speculative = 4;
  return r;
}

// Polls the engine's one request to its end (30 s at most), collecting its tokens; false if it did
// not finish.
bool drain_one(Engine& engine, std::vector<int32_t>& ids) {
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < until) {
    std::vector<EngineEvent> ev;
    engine.poll_events(ev);
    bool finished = false;
    for (const EngineEvent& e : ev) {
      for (const GeneratedToken& t : e.tokens) ids.push_back(t.id);
      if (e.type == EventType::kError) ADD_FAILURE() << e.error_message;
      finished |= e.type == EventType::kFinished;
    }
    if (finished) return true;
    if (ev.empty()) std::this_thread::sleep_for(1ms);
  }
  return false;
}

// A target with no step rows to spare for drafts (max_step_seqs == max_seqs) verifies none, so
// the draft model must not run: its drafts would all be discarded. With rows to spare it does run
// (the counter below sees draft steps), and both give the plain greedy tokens.
TEST(DraftModelIdle, TheDraftModelRunsOnlyWhenTheTargetVerifiesDrafts) {
  const FakeTokenizer tok = FakeTokenizer::letters(64);
  for (const int32_t max_seqs : {4, 2}) {
    FakeRunnerOptions target;
    target.max_step_seqs = 4;
    auto draft = std::make_unique<FakeRunner>(FakeRunnerOptions{});
    const std::shared_ptr<FakeRunner::Shared> draft_steps = draft->shared();
    EngineConfig cfg;
    cfg.max_seqs = max_seqs;
    cfg.speculative_cost_model = false;  // verify every draft found
    Engine engine(std::make_unique<FakeRunner>(target), tok, cfg, std::move(draft));
    const GenerateRequest r = abc_speculative(tok, 12);
    const SubmitResult s = engine.submit(r);
    ASSERT_TRUE(s.ok) << s.message;
    std::vector<int32_t> ids;
    ASSERT_TRUE(drain_one(engine, ids)) << "max_seqs " << max_seqs;
    EXPECT_EQ(ids, greedy_reference(hashed_logits, 64, r.prompt_ids, 12)) << "max_seqs " << max_seqs;
    if (max_seqs == 4) {
      EXPECT_EQ(draft_steps->steps_started, 0) << "the draft model ran for drafts no step could verify";
    } else {
      EXPECT_GT(draft_steps->steps_started, 0) << "with rows to spare the draft model should draft";
    }
  }
}

// The target's logits rotated by one id: its greedy token is always the target's plus one, so none
// of its drafts is ever accepted.
void off_by_one_logits(std::span<const int32_t> history, std::span<float> logits) {
  std::vector<float> h(logits.size());
  hashed_logits(history, h);
  for (size_t i = 0; i < logits.size(); ++i) logits[(i + 1) % logits.size()] = h[i];
}

struct CostRun {
  std::vector<int32_t> ids;
  int32_t draft_steps = 0;
  int64_t accepted = 0;
};

// An engine with the cost model on (max_seqs 2) over a fake target whose steps take `target_step`
// whatever their width (a bandwidth-bound device) and a fake draft model whose steps it counts.
struct CostEngine {
  CostEngine(const FakeTokenizer& tok, std::chrono::microseconds target_step, const FakeRunnerOptions& draft,
             LogitsFn draft_fn) {
    FakeRunnerOptions target;
    target.step_delay = target_step;
    auto draft_runner = std::make_unique<FakeRunner>(draft, std::move(draft_fn));
    draft_model = draft_runner->shared();
    EngineConfig cfg;
    cfg.max_seqs = 2;
    engine = std::make_unique<Engine>(std::make_unique<FakeRunner>(target), tok, cfg, std::move(draft_runner));
  }
  // Runs `r` (greedy) to its end; its tokens, checked against plain greedy decoding.
  std::vector<int32_t> run(const GenerateRequest& r) {
    const SubmitResult s = engine->submit(r);
    EXPECT_TRUE(s.ok) << s.message;
    std::vector<int32_t> ids;
    EXPECT_TRUE(drain_one(*engine, ids));
    EXPECT_EQ(ids, greedy_reference(hashed_logits, 64, r.prompt_ids, r.stop.max_tokens));
    return ids;
  }
  std::shared_ptr<FakeRunner::Shared> draft_model;
  std::unique_ptr<Engine> engine;
};

// One greedy request of 60 tokens with drafts of up to 4.
CostRun run_with_draft_cost(const FakeTokenizer& tok, std::chrono::microseconds target_step, LogitsFn draft_fn,
                            std::chrono::microseconds draft_step) {
  FakeRunnerOptions draft;
  draft.step_delay = draft_step;
  CostEngine e(tok, target_step, draft, std::move(draft_fn));
  CostRun out;
  out.ids = e.run(abc_speculative(tok, 60));
  out.draft_steps = e.draft_model->steps_started;
  out.accepted = e.engine->stats().accepted_tokens;
  return out;
}

// A draft model whose guesses are never right, as slow as the target: drafting cannot pay, so after
// its first 4 drafts measure its cost (4 draft-model steps each) it runs only for rare shadow probes
// (~3% of decoding time). Before the cost model counted the draft model's steps it ran 4 steps for
// every target step (226 here).
TEST(DraftModelCost, ADraftModelThatDoesNotPayIsLeftIdle) {
  const FakeTokenizer tok = FakeTokenizer::letters(64);
  const CostRun run = run_with_draft_cost(tok, 2ms, off_by_one_logits, 2ms);
  EXPECT_EQ(run.accepted, 0);
  EXPECT_LE(run.draft_steps, 24) << "the draft model kept drafting although none of its drafts pays";
}

// The same target with a draft model equal to it and 40x faster: its drafts are all right and
// nearly free, and the request keeps speculating (checked: the cost model does not starve it).
TEST(DraftModelCost, ACheapAccurateDraftModelIsUsed) {
  const FakeTokenizer tok = FakeTokenizer::letters(64);
  const CostRun run = run_with_draft_cost(tok, 4ms, hashed_logits, 100us);
  EXPECT_GE(run.accepted, 20) << "draft steps " << run.draft_steps;
}

// Two greedy requests one after the other on one CostEngine: a first one of 60 tokens that teaches
// the engine the draft model's costs and acceptance, then the one measured. Returns the second's
// draft-model steps and its drafted and accepted tokens.
struct SecondRun {
  int32_t draft_steps = 0;
  int64_t drafted = 0, accepted = 0;
};
SecondRun second_request(const FakeTokenizer& tok, LogitsFn draft_fn, const FakeRunnerOptions& draft,
                         std::chrono::microseconds target_step, const std::string& first_prompt,
                         const std::string& second_prompt, int32_t second_tokens) {
  CostEngine e(tok, target_step, draft, std::move(draft_fn));
  GenerateRequest first = abc_speculative(tok, 60);
  first.prompt_ids = tok.encode(first_prompt, true);
  e.run(first);
  GenerateRequest second = abc_speculative(tok, second_tokens);
  second.prompt_ids = tok.encode(second_prompt, true);
  const int32_t steps_before = e.draft_model->steps_started;
  const EngineStats before = e.engine->stats();
  e.run(second);
  const EngineStats after = e.engine->stats();
  return {e.draft_model->steps_started - steps_before, after.draft_tokens - before.draft_tokens,
          after.accepted_tokens - before.accepted_tokens};
}

std::string repeat(const std::string& s, int32_t n) {
  std::string out;
  for (int32_t i = 0; i < n; ++i) out += s;
  return out;
}

// A draft model that is never right, cheap per step but fed a long prompt in many small steps
// (4 tokens): a shadow probe's price includes feeding it the tokens it has not seen (the cost per
// token learned from the first request's prompt), so a second request with another 150-token
// prompt is not probed within its 60 tokens (due after ~138 plain steps: room for a loaded machine's
// stretched steps). Priced by its draft steps alone, a probe was due every ~13 plain steps, the
// first feeding the whole prompt (~40 draft-model steps).
TEST(DraftModelCost, AProbeIsPricedWithTheTokensItFeeds) {
  const FakeTokenizer tok = FakeTokenizer::letters(64);
  FakeRunnerOptions draft;
  draft.step_delay = 200us;
  draft.max_step_tokens = 4;
  const SecondRun run = second_request(tok, off_by_one_logits, draft, 2ms, repeat("abc", 50), repeat("bca", 50), 60);
  EXPECT_EQ(run.accepted, 0);
  EXPECT_LT(run.draft_steps, 20) << "the draft model was fed the long prompt for probes that could not pay";
}

// A draft model that was right on earlier requests drafts from a new request's first steps: its
// acceptance starts from the engine's record (no shadow probe first, which at these costs would be
// due after ~17 plain steps, past the request's 12 tokens).
TEST(DraftModelCost, ANewRequestStartsFromTheDraftModelsRecord) {
  const FakeTokenizer tok = FakeTokenizer::letters(64);
  FakeRunnerOptions draft;
  draft.step_delay = 500us;
  const SecondRun run = second_request(tok, hashed_logits, draft, 4ms, "abcabcabc", "abcabcabc", 12);
  EXPECT_GE(run.accepted, 4) << "drafted " << run.drafted;
}

TEST(DraftModelVocabulary, AnotherVocabularySizeIsRefused) {
  // The fixtures all have 512 tokens: fake runners of 64 and 80 (the token texts are the server's
  // check, server/draft_model.h).
  const FakeTokenizer tok = FakeTokenizer::letters(64);
  FakeRunnerOptions target, draft;
  draft.vocab_size = 80;
  try {
    Engine engine(std::make_unique<FakeRunner>(target), tok, EngineConfig{}, std::make_unique<FakeRunner>(draft));
    ADD_FAILURE() << "a draft model of another vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("vocabulary (80 tokens) differs from the model's (64)"), std::string::npos)
        << e.what();
  }
  draft.vocab_size = 64;
  EXPECT_NO_THROW(Engine(std::make_unique<FakeRunner>(target), tok, EngineConfig{}, std::make_unique<FakeRunner>(draft)));
}

}  // namespace
}  // namespace vks::test
