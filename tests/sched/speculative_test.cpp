// Prompt-lookup speculative decoding never changes a greedy token: on real models (stories260K and
// qwen2-tiny) the ids with speculation equal plain decoding's alone, batched, across preemptions,
// after a prefix-cache hit and at every max_tokens, with drafts that were rejected (so stale K/V
// past the accepted prefix would show). Built for the CPU runner (label unit) and for Vulkan
// (VKS_SCHED_TEST_VULKAN, label vulkan). The fake-runner cases (no model) check the same on a
// runner whose logits read the whole history back from its paged pool, and that sampled,
// penalized, logprobs and constrained requests speculate with the tokens they give without.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "engine/sched/ngram_drafter.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/sched/engine_harness.h"
#include "tests/sched/model_test_runner.h"

namespace vks::test {
namespace {

using namespace std::chrono_literals;

struct Outcome {
  std::vector<std::vector<int32_t>> ids;
  std::vector<EngineEvent> finished;
  EngineStats stats;
};

Outcome run_engine(std::unique_ptr<ModelRunner> runner, const Tokenizer& tok, const std::vector<GenerateRequest>& reqs,
                   EngineConfig cfg, bool one_by_one = false) {
  Outcome o;
  Engine engine(std::move(runner), tok, cfg);
  std::vector<std::string> ids;
  std::map<std::string, std::vector<int32_t>> out;
  std::map<std::string, EngineEvent> done;
  auto drain_until = [&](auto pred) {
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (!pred() && std::chrono::steady_clock::now() < until) {
      std::vector<EngineEvent> ev;
      engine.poll_events(ev);
      for (const EngineEvent& e : ev) {
        for (const GeneratedToken& t : e.tokens) out[e.request_id].push_back(t.id);
        if (e.type == EventType::kError) ADD_FAILURE() << e.error_message;
        if (e.type == EventType::kFinished) done[e.request_id] = e;
      }
      if (ev.empty()) std::this_thread::sleep_for(1ms);
    }
  };
  for (const GenerateRequest& r : reqs) {
    const SubmitResult s = engine.submit(r);
    EXPECT_TRUE(s.ok) << s.message;
    ids.push_back(s.id);
    if (one_by_one) drain_until([&] { return done.count(s.id) != 0; });
  }
  drain_until([&] {
    for (const auto& id : ids) {
      if (!done.count(id)) return false;
    }
    return true;
  });
  o.stats = engine.stats();
  for (const auto& id : ids) {
    EXPECT_TRUE(done.count(id)) << "request " << id << " did not finish";
    o.ids.push_back(out[id]);
    o.finished.push_back(done[id]);
  }
  return o;
}

GenerateRequest greedy(std::vector<int32_t> prompt, int32_t max_tokens, std::optional<int32_t> speculative) {
  GenerateRequest r = greedy_request(std::move(prompt), max_tokens);
  r.logprobs = -1;
  r.speculative = speculative;
  return r;
}

class SpeculativeModel : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    model_ = LlamaModel::load(model_path(GetParam()));
    tok_ = Tokenizer::from_gguf(model_->file());
  }
  // Null where the Vulkan build finds no device (the test skips).
  std::unique_ptr<ModelRunner> make(int32_t num_blocks) {
    try {
      return model_test_runner(*model_, num_blocks);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDevice) return nullptr;
      throw;
    }
  }
  std::vector<int32_t> encode(const std::string& text) const { return tok_->encode(text, true); }

  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_P(SpeculativeModel, GreedyIdsEqualPlainDecoding) {
  auto probe = make(256);
  if (!probe) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: test skipped");
  probe.reset();
  // Repetitive prompts (drafts found and mostly accepted) and plain ones (drafts often rejected).
  const std::vector<std::string> prompts = {
      "Once upon a time", "Tom had a red ball. Tom had a red ball. Tom had a red ball. Tom had",
      "The cat sat. The dog sat. The cat sat. The dog", "Lily went to the park"};
  std::vector<GenerateRequest> plain, spec;
  for (size_t i = 0; i < prompts.size(); ++i) {
    plain.push_back(greedy(encode(prompts[i]), 40 + 5 * static_cast<int32_t>(i), 0));
    spec.push_back(greedy(encode(prompts[i]), 40 + 5 * static_cast<int32_t>(i), 5));
  }
  EngineConfig cfg;
  cfg.speculative_cost_model = false;  // verify every draft found
  cfg.max_seqs = 8;
  const Outcome ref = run_engine(make(256), *tok_, plain, cfg, true);
  const Outcome alone = run_engine(make(256), *tok_, spec, cfg, true);
  const Outcome batched = run_engine(make(256), *tok_, spec, cfg);
  int64_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(alone.ids[i], ref.ids[i]) << "alone: " << prompts[i];
    EXPECT_EQ(batched.ids[i], ref.ids[i]) << "batched: " << prompts[i];
    EXPECT_EQ(ref.finished[i].timings.draft_tokens, 0);
    drafted += alone.finished[i].timings.draft_tokens;
    accepted += alone.finished[i].timings.accepted_tokens;
  }
  EXPECT_EQ(alone.stats.draft_tokens, drafted);
  EXPECT_EQ(alone.stats.accepted_tokens, accepted);
  EXPECT_GT(accepted, 0) << "no draft was accepted: nothing was verified in one step";
  // qwen2-tiny's random weights loop so regularly that every draft is right there.
  if (std::string(GetParam()) == "stories260K.gguf") {
    EXPECT_GT(drafted, accepted) << "no draft was rejected: rollback was not exercised";
  }
  EXPECT_GT(batched.stats.accepted_tokens, 0);
  EXPECT_LT(alone.stats.steps, ref.stats.steps) << "speculation saved no step";
  EXPECT_EQ(alone.stats.kv_blocks_used, 0);
  EXPECT_EQ(batched.stats.kv_blocks_used, 0);
}

TEST_P(SpeculativeModel, ExactAcrossPreemptionPrefixCacheAndMaxTokens) {
  auto probe = make(256);
  if (!probe) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: test skipped");
  probe.reset();
  const std::vector<int32_t> prompt = encode("Tom had a red ball. Tom had a red ball. Tom had");
  // 8 requests of up to ~60 tokens in 24 blocks of 4: preemptions, with drafts in flight.
  std::vector<GenerateRequest> plain, spec;
  for (int32_t i = 0; i < 8; ++i) {
    std::vector<int32_t> p = prompt;
    p.push_back(300 + i);
    plain.push_back(greedy(p, 30 + i, 0));
    spec.push_back(greedy(p, 30 + i, 4));
  }
  EngineConfig cfg;
  cfg.speculative_cost_model = false;  // verify every draft found
  cfg.max_seqs = 8;
  const Outcome ref = run_engine(make(256), *tok_, plain, cfg);
  const Outcome small = run_engine(make(24), *tok_, spec, cfg);
  EXPECT_GT(small.stats.preemptions, 0);
  EXPECT_GT(small.stats.draft_tokens, 0);
  for (size_t i = 0; i < spec.size(); ++i) EXPECT_EQ(small.ids[i], ref.ids[i]) << "request " << i << " after preemption";
  EXPECT_EQ(small.stats.kv_blocks_used, 0);

  // The same prompt twice, one after the other: the second starts from the first's cached blocks
  // (registered only from verified tokens) and must still decode plainly.
  std::vector<int32_t> longer = prompt;
  longer.insert(longer.end(), ref.ids[0].begin(), ref.ids[0].begin() + 12);
  const Outcome cached = run_engine(make(256), *tok_, {greedy(longer, 20, 4), greedy(longer, 20, 4)}, cfg, true);
  EXPECT_GT(cached.finished[1].usage.cached_tokens, 0);
  const Outcome cached_ref = run_engine(make(256), *tok_, {greedy(longer, 20, 0)}, cfg);
  EXPECT_EQ(cached.ids[0], cached_ref.ids[0]);
  EXPECT_EQ(cached.ids[1], cached_ref.ids[0]);

  // max_tokens is exact whatever was drafted: every length gives plain decoding's prefix.
  std::vector<GenerateRequest> lengths;
  for (int32_t n = 1; n <= 12; ++n) lengths.push_back(greedy(prompt, n, 8));
  const Outcome cut = run_engine(make(256), *tok_, lengths, cfg);
  const Outcome full = run_engine(make(256), *tok_, {greedy(prompt, 12, 0)}, cfg);
  for (int32_t n = 1; n <= 12; ++n) {
    EXPECT_EQ(cut.ids[n - 1], std::vector<int32_t>(full.ids[0].begin(), full.ids[0].begin() + n)) << "max_tokens " << n;
    EXPECT_EQ(cut.finished[n - 1].reason, FinishReason::kLength);
  }
  EXPECT_GT(cut.stats.accepted_tokens, 0);
}

#ifndef VKS_SCHED_TEST_VULKAN
// Two-sample Pearson chi-square over the tokens seen >= 10 times in both samples together (the
// rest pooled), against its critical value at p = 1e-6 (Wilson-Hilferty): true when the two
// samples fit one distribution.
bool same_distribution(const std::vector<int32_t>& a, const std::vector<int32_t>& b, double& chi2, double& crit) {
  std::map<int32_t, std::pair<double, double>> counts;
  for (int32_t t : a) counts[t].first += 1;
  for (int32_t t : b) counts[t].second += 1;
  std::vector<std::pair<double, double>> bins;
  std::pair<double, double> pooled{0, 0};
  for (const auto& [id, c] : counts) {
    if (c.first + c.second >= 10) {
      bins.push_back(c);
    } else {
      pooled.first += c.first;
      pooled.second += c.second;
    }
  }
  if (pooled.first + pooled.second > 0) bins.push_back(pooled);
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  chi2 = 0;
  for (const auto& [x, y] : bins) {
    const double ea = (x + y) * na / (na + nb), eb = (x + y) * nb / (na + nb);
    chi2 += (x - ea) * (x - ea) / ea + (y - eb) * (y - eb) / eb;
  }
  const double df = std::max<double>(1, static_cast<double>(bins.size()) - 1), z = 4.753;  // one-sided 1e-6
  crit = df * std::pow(1 - 2 / (9 * df) + z * std::sqrt(2 / (9 * df)), 3);
  return chi2 < crit;
}

// Sampled speculation on stories260K (temperature 1 over a repetitive prompt, so drafts are found
// and both accepted and rejected): over many seeds, the token frequencies at each output position
// match plain sampling's over other seeds (chi-square); a seeded request gives the same tokens run
// to run and, by row_draws.h's construction, plain sampling's tokens for that seed; and greedy
// requests in the same batch keep plain decoding's tokens.
class SpeculativeSampling : public SpeculativeModel {};

TEST_P(SpeculativeSampling, SampledTokensHavePlainSamplingsDistribution) {
  const std::vector<int32_t> prompt = encode("Tom had a red ball. Tom had a red ball. Tom had");
  constexpr int32_t kSeeds = 800, kTokens = 20, kRepeated = 100;
  auto requests = [&](uint64_t first_seed, int32_t n, std::optional<int32_t> speculative) {
    std::vector<GenerateRequest> reqs;
    for (int32_t i = 0; i < n; ++i) {
      GenerateRequest r = greedy(prompt, kTokens, speculative);
      r.sampling.temperature = 1.0f;
      r.sampling.seed = first_seed + static_cast<uint64_t>(i);
      reqs.push_back(r);
    }
    reqs.push_back(greedy(prompt, 30, speculative));  // a greedy request batched with them
    return reqs;
  };
  EngineConfig cfg;
  cfg.speculative_cost_model = false;  // verify every draft found
  cfg.max_seqs = 16;  // of the runner's 32 output rows: 16 left for verification
  cfg.max_queued = 2 * kSeeds;
  const Outcome plain = run_engine(make(2048), *tok_, requests(1, kSeeds, 0), cfg);
  const Outcome spec = run_engine(make(2048), *tok_, requests(1 + kSeeds, kSeeds, 4), cfg);
  const Outcome spec_same_seeds = run_engine(make(2048), *tok_, requests(1, kRepeated, 4), cfg);
  const Outcome spec_again = run_engine(make(2048), *tok_, requests(1, kRepeated, 4), cfg);
  EXPECT_GT(spec.stats.accepted_tokens, 0);
  EXPECT_GT(spec.stats.draft_tokens, spec.stats.accepted_tokens) << "no draft was rejected";
  for (int32_t pos = 0; pos < kTokens; ++pos) {
    std::vector<int32_t> a, b;
    for (int32_t i = 0; i < kSeeds; ++i) {
      if (pos < static_cast<int32_t>(plain.ids[i].size())) a.push_back(plain.ids[i][pos]);
      if (pos < static_cast<int32_t>(spec.ids[i].size())) b.push_back(spec.ids[i][pos]);
    }
    double chi2 = 0, crit = 0;
    EXPECT_TRUE(same_distribution(a, b, chi2, crit)) << "position " << pos << ": chi2 " << chi2 << " > " << crit;
  }
  // Where a broken acceptance rule shows most: how often a token is the one prompt lookup drafts
  // for its position. The count per sequence is compared between the samples (independent
  // sequences: z-test of the means, |z| < 5, p ~ 6e-7).
  auto draft_hits = [&](const Outcome& o) {
    std::vector<double> hits;
    std::vector<int32_t> history, draft;
    for (int32_t i = 0; i < kSeeds; ++i) {
      history = prompt;
      double n = 0;
      for (int32_t t : o.ids[static_cast<size_t>(i)]) {
        sched::ngram_draft(history, 1, draft);
        n += !draft.empty() && draft[0] == t ? 1 : 0;
        history.push_back(t);
      }
      hits.push_back(n);
    }
    return hits;
  };
  auto mean_var = [](const std::vector<double>& x, double& mean, double& var) {
    mean = var = 0;
    for (double v : x) mean += v / static_cast<double>(x.size());
    for (double v : x) var += (v - mean) * (v - mean) / static_cast<double>(x.size() - 1);
  };
  double mean_a = 0, var_a = 0, mean_b = 0, var_b = 0;
  mean_var(draft_hits(plain), mean_a, var_a);
  mean_var(draft_hits(spec), mean_b, var_b);
  const double z = (mean_b - mean_a) / std::sqrt((var_a + var_b) / kSeeds);
  EXPECT_LT(std::abs(z), 5.0) << "tokens equal to the draft per sequence: " << mean_b << " vs plain " << mean_a;
  for (size_t i = 0; i < kRepeated; ++i) {
    EXPECT_EQ(spec_same_seeds.ids[i], spec_again.ids[i]) << "seed " << i + 1 << " not reproducible";
    EXPECT_EQ(spec_same_seeds.ids[i], plain.ids[i]) << "seed " << i + 1 << " differs from plain sampling";
  }
  EXPECT_GT(spec_same_seeds.stats.accepted_tokens, 0);
  EXPECT_EQ(spec.ids[kSeeds], plain.ids[kSeeds]) << "greedy, batched with the sampled ones";
  EXPECT_EQ(spec_same_seeds.ids[kRepeated], plain.ids[kSeeds]) << "greedy, batched with the sampled ones";
}

INSTANTIATE_TEST_SUITE_P(Stories, SpeculativeSampling, ::testing::Values("stories260K.gguf"));
#endif

#ifdef VKS_SCHED_TEST_VULKAN
// lavapipe builds a runner in ~0.5 s and these tests build a dozen: one fixture keeps CI short.
INSTANTIATE_TEST_SUITE_P(Fixtures, SpeculativeModel, ::testing::Values("stories260K.gguf"));
#else
INSTANTIATE_TEST_SUITE_P(Fixtures, SpeculativeModel, ::testing::Values("stories260K.gguf", "qwen2-tiny.gguf"));
#endif

#ifndef VKS_SCHED_TEST_VULKAN
// A history whose greedy continuation cycles with period 5 after a while, so drafts are found and
// accepted, with a hash-dependent break every so often so that some are rejected.
void cyclic_logits(std::span<const int32_t> history, std::span<float> logits) {
  hashed_logits(history, logits);
  const size_t n = history.size();
  if (n % 7 == 3) return;  // unpredictable position: plain hashed logits
  const int32_t next = n >= 5 ? history[n - 5] : 10 + static_cast<int32_t>(n);
  logits[static_cast<size_t>(next)] += 100.0f;
}

TEST(SpeculativeFake, EqualsReferenceAndNeverCachesUnverifiedTokens) {
  EngineConfig cfg;
  cfg.speculative_cost_model = false;  // verify every draft found
  cfg.speculative_draft = 6;  // the engine default: requests leave `speculative` unset
  FakeRunnerOptions ro;
  ro.max_step_seqs = 32;
  Harness h(cfg, ro, cyclic_logits);
  const std::vector<int32_t> prompt = {1, 5, 6, 7, 8, 9};
  const auto want = greedy_reference(cyclic_logits, 64, prompt, 50);
  GenerateRequest first = greedy_request(prompt, 50);
  first.logprobs = -1;  // logprobs need full logits rows: no speculation
  const std::string a = h.submit_ok(first);
  ASSERT_TRUE(h.wait({a}));
  EXPECT_EQ(h.stream(a).ids, want);
  const Timings& t = h.stream(a).final_event.timings;
  EXPECT_GT(t.accepted_tokens, 0);
  EXPECT_GT(t.draft_tokens, t.accepted_tokens);
  // The fake reads every history back from its pool: a cached block holding a rejected draft's
  // token would change this continuation of prompt + 30 generated tokens.
  std::vector<int32_t> longer = prompt;
  longer.insert(longer.end(), want.begin(), want.begin() + 30);
  GenerateRequest second = greedy_request(longer, 20);
  second.logprobs = -1;
  const std::string b = h.submit_ok(second);
  ASSERT_TRUE(h.wait({b}));
  EXPECT_GT(h.stream(b).final_event.usage.cached_tokens, 0);
  EXPECT_EQ(h.stream(b).ids, greedy_reference(cyclic_logits, 64, longer, 20));
  // Steps verified drafts: some step held more tokens than sequences.
  std::lock_guard lock(h.runner().mu);
  bool verified = false;
  for (const StepRecord& s : h.runner().steps) {
    for (const StepRecord::Seq& q : s.seqs) verified |= q.n_verify > 0;
  }
  EXPECT_TRUE(verified);
}

// The cost model (on by default) drafts what the measured step times say pays, and shadows the rest:
// whatever it chose, tokens are plain decoding's, alone and batched.
TEST(SpeculativeFake, CostModelKeepsTokensExact) {
  EngineConfig cfg;
  cfg.speculative_draft = 6;
  FakeRunnerOptions ro;
  ro.max_step_seqs = 32;
  Harness h(cfg, ro, cyclic_logits);
  std::vector<std::string> ids;
  std::vector<std::vector<int32_t>> want;
  for (int32_t i = 0; i < 3; ++i) {
    const std::vector<int32_t> prompt = {1, 5 + i, 6, 7, 8, 9};
    want.push_back(greedy_reference(cyclic_logits, 64, prompt, 40));
    GenerateRequest r = greedy_request(prompt, 40);
    r.logprobs = -1;
    ids.push_back(h.submit_ok(r));
  }
  ASSERT_TRUE(h.wait(ids));
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(h.stream(ids[i]).ids, want[i]) << i;
    EXPECT_LE(h.stream(ids[i]).final_event.timings.accepted_tokens, h.stream(ids[i]).final_event.timings.draft_tokens);
  }
}

// Requests drawn from full logits rows speculate too, and each gives exactly the tokens (and
// logprobs) it gives without speculation: a seeded sampled one (row_draws.h: the same RNG draws),
// one with logprobs, one with penalties and a grammar-constrained one. `speculative: 0` stays off.
TEST(SpeculativeFake, FullLogitsRequestsSpeculateAndKeepTheirTokens) {
  EngineConfig cfg;
  cfg.speculative_cost_model = false;  // verify every draft found
  cfg.speculative_draft = 4;
  FakeRunnerOptions ro;
  ro.max_step_seqs = 32;
  Harness h(cfg, ro, cyclic_logits);
  const std::vector<int32_t> prompt = {1, 5, 6, 7, 8, 9};
  GenerateRequest sampled = greedy_request(prompt, 30);
  sampled.logprobs = -1;
  sampled.sampling.temperature = 0.7f;
  sampled.sampling.seed = 7;
  GenerateRequest off = greedy_request(prompt, 30);
  off.logprobs = -1;
  off.speculative = 0;
  GenerateRequest with_logprobs = greedy_request(prompt, 30);
  with_logprobs.logprobs = 2;
  GenerateRequest penalized = greedy_request(prompt, 30);
  penalized.logprobs = -1;
  penalized.sampling.repetition_penalty = 1.3f;
  penalized.sampling.frequency_penalty = 0.5f;
  GenerateRequest grammar = greedy_request(prompt, 20);
  grammar.logprobs = -1;
  grammar.grammar = "root ::= [a-z]+";
  const std::vector<GenerateRequest> reqs = {sampled, off, with_logprobs, penalized, grammar};
  std::vector<std::string> ids;
  for (const GenerateRequest& r : reqs) ids.push_back(h.submit_ok(r));
  ASSERT_TRUE(h.wait(ids));
  EXPECT_EQ(h.stream(ids[1]).final_event.timings.draft_tokens, 0);
  for (size_t i : {0u, 2u, 3u, 4u}) EXPECT_GT(h.stream(ids[i]).final_event.timings.draft_tokens, 0) << i;
  Harness plain(EngineConfig{}, ro, cyclic_logits);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const std::string p = plain.submit_ok(reqs[i]);
    ASSERT_TRUE(plain.wait({p}));
    EXPECT_EQ(plain.stream(p).final_event.timings.draft_tokens, 0);
    EXPECT_NE(h.stream(ids[i]).final_event.reason, FinishReason::kError) << i;
    EXPECT_EQ(h.stream(ids[i]).ids, plain.stream(p).ids) << "request " << i;
    EXPECT_EQ(h.stream(ids[i]).text, plain.stream(p).text) << "request " << i;
    std::vector<float> spec_logprobs, plain_logprobs;
    for (const EngineEvent& e : h.stream(ids[i]).events) {
      for (const GeneratedToken& t : e.tokens) spec_logprobs.push_back(t.logprob);
    }
    for (const EngineEvent& e : plain.stream(p).events) {
      for (const GeneratedToken& t : e.tokens) plain_logprobs.push_back(t.logprob);
    }
    EXPECT_EQ(spec_logprobs, plain_logprobs) << "request " << i;
  }
  GenerateRequest bad = greedy_request(prompt, 5);
  bad.speculative = 17;
  EXPECT_FALSE(h.engine().submit(bad).ok);
}
#endif

}  // namespace
}  // namespace vks::test
