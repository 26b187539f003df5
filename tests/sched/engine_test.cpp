// Engine over the fake runner: event streams, batching, chunking, preemption, prefix cache,
// deadlines, cancellation, admission errors, overload and runner failures.
#include "engine/sched/engine.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <thread>

#include "tests/sched/engine_harness.h"

namespace vks::test {
namespace {

using namespace std::chrono_literals;
using Types = std::vector<EventType>;

std::vector<int32_t> prompt_of(int32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p = {1};
  for (int32_t i = 1; i < n; ++i) p.push_back(3 + static_cast<int32_t>(rng() % 60));
  return p;
}

TEST(Engine, GreedyMatchesReferenceWithFullEventSequence) {
  Harness h;
  const auto prompt = prompt_of(6, 1);
  const std::string id = h.submit_ok(greedy_request(prompt, 12));
  ASSERT_EQ(id.size(), 32u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  ASSERT_TRUE(h.wait({id}));
  const Stream& s = h.stream(id);
  EXPECT_EQ(s.ids, greedy_reference(hashed_logits, 64, prompt, 12));
  Types want = {EventType::kQueued, EventType::kScheduled, EventType::kFirstToken};
  for (int i = 0; i < 11; ++i) want.push_back(EventType::kToken);
  want.push_back(EventType::kFinished);
  EXPECT_EQ(s.types(), want);
  EXPECT_EQ(s.events[0].queue_position, 0);
  EXPECT_EQ(s.text, h.tokenizer().decode(s.ids));
  EXPECT_EQ(s.final_event.reason, FinishReason::kLength);
  EXPECT_EQ(s.final_event.usage.prompt_tokens, 6);
  EXPECT_EQ(s.final_event.usage.generated_tokens, 12);
  EXPECT_GE(s.final_event.timings.total_ms, s.final_event.timings.ttft_ms);
  EXPECT_GE(s.final_event.timings.ttft_ms, s.final_event.timings.queue_ms);
  // Default logprobs = 0: the chosen token's logprob, no alternatives.
  for (const EngineEvent& e : s.events) {
    for (const GeneratedToken& t : e.tokens) {
      EXPECT_LE(t.logprob, 0.0f);
      EXPECT_TRUE(t.top.empty());
    }
  }
  const EngineStats st = h.engine().stats();
  EXPECT_EQ(st.requests_finished, 1);
  EXPECT_EQ(st.tokens_generated, 12);
  EXPECT_EQ(st.kv_blocks_used, 0);
}

TEST(Engine, ArgmaxModeWhenNothingNeedsFullLogits) {
  Harness h;
  GenerateRequest r = greedy_request(prompt_of(5, 2), 4);
  r.logprobs = -1;
  const std::string a = h.submit_ok(r);
  ASSERT_TRUE(h.wait({a}));
  std::lock_guard lock(h.runner().mu);
  int argmax = 0, full = 0;
  for (const StepRecord& st : h.runner().steps) {
    for (const auto& s : st.seqs) {
      argmax += s.logits == LogitsMode::kArgmax;
      full += s.logits == LogitsMode::kFull;
    }
  }
  EXPECT_EQ(argmax, 4);
  EXPECT_EQ(full, 0);
  EXPECT_EQ(h.stream(a).ids, greedy_reference(hashed_logits, 64, prompt_of(5, 2), 4));
}

TEST(Engine, LogprobsTopN) {
  Harness h;
  GenerateRequest r = greedy_request(prompt_of(5, 3), 3);
  r.logprobs = 4;
  const std::string a = h.submit_ok(r);
  ASSERT_TRUE(h.wait({a}));
  for (const EngineEvent& e : h.stream(a).events) {
    for (const GeneratedToken& t : e.tokens) {
      ASSERT_EQ(t.top.size(), 4u);
      EXPECT_EQ(t.top[0].id, t.id);  // greedy: the chosen token is the most likely
      EXPECT_FLOAT_EQ(t.top[0].logprob, t.logprob);
    }
  }
}

// Each request's tokens are the same alone and batched with 15 others, greedy and seeded sampling.
TEST(Engine, BatchInvarianceGreedyAndSeeded) {
  auto make = [](int i) {
    GenerateRequest r = greedy_request(prompt_of(3 + i * 2, 100 + i), 10 + i);
    if (i % 2) {
      r.sampling.temperature = 0.9f;
      r.sampling.top_p = 0.9f;
      r.sampling.seed = 77 + i;
    }
    return r;
  };
  std::vector<std::vector<int32_t>> alone;
  for (int i = 0; i < 16; ++i) {
    Harness h;
    const std::string id = h.submit_ok(make(i));
    ASSERT_TRUE(h.wait({id}));
    alone.push_back(h.stream(id).ids);
  }
  for (int32_t workers : {1, 4}) {
  EngineConfig cfg;
  cfg.worker_threads = workers;  // sampling on a pool must not change anything either
  Harness h(cfg);
  // A one-token request holds the first step while the 16 queue up, so they start together.
  h.runner().hold = true;
  const std::string opener = h.submit_ok(greedy_request(prompt_of(2, 1), 1));
  std::vector<std::string> ids;
  for (int i = 0; i < 16; ++i) ids.push_back(h.submit_ok(make(i)));
  h.runner().hold = false;
  ASSERT_TRUE(h.wait(ids));
  ASSERT_TRUE(h.wait({opener}));
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(h.stream(ids[i]).ids, alone[i]) << "request " << i << " workers " << workers;
    if (i % 2 == 0) {
      EXPECT_EQ(alone[i], greedy_reference(hashed_logits, 64, prompt_of(3 + i * 2, 100 + i), 10 + i));
    }
  }
  std::lock_guard lock(h.runner().mu);
  size_t widest = 0;
  for (const StepRecord& st : h.runner().steps) widest = std::max(widest, st.seqs.size());
  EXPECT_EQ(widest, 16u);  // they really were batched
  }
}

TEST(Engine, ChunkedPrefillGivesSameTokensAndRespectsBudget) {
  EngineConfig cfg;
  cfg.max_batched_tokens = 8;
  cfg.max_seqs = 4;
  Harness h(cfg);
  const auto prompt = prompt_of(45, 5);
  const std::string id = h.submit_ok(greedy_request(prompt, 6));
  ASSERT_TRUE(h.wait({id}));
  EXPECT_EQ(h.stream(id).ids, greedy_reference(hashed_logits, 64, prompt, 6));
  std::lock_guard lock(h.runner().mu);
  std::vector<int32_t> prefill;
  for (const StepRecord& st : h.runner().steps) {
    EXPECT_LE(st.n_tokens, 8);
    if (st.seqs.at(0).n_past < 45) prefill.push_back(st.seqs[0].n_tokens);
  }
  EXPECT_EQ(prefill, (std::vector<int32_t>{8, 8, 8, 8, 8, 5}));
}

// The prompt progress of each kProgress event of a stream, in order.
std::vector<int32_t> progress_of(const Stream& s) {
  std::vector<int32_t> done;
  for (const EngineEvent& e : s.events) {
    if (e.type == EventType::kProgress) done.push_back(e.prompt_tokens_done);
  }
  return done;
}

// A prompt read in several steps says how far it got after each (interval 0), ending with its
// length before its first token; a prompt read in one step, from the prefix cache or not, says
// nothing. Progress is not a token: the output is the reference's.
TEST(Engine, APromptReadInSeveralStepsReportsItsProgress) {
  EngineConfig cfg;
  cfg.max_batched_tokens = 8;
  cfg.progress_interval_ms = 0;
  Harness h(cfg);
  const auto prompt = prompt_of(45, 5);
  const std::string id = h.submit_ok(greedy_request(prompt, 4));
  ASSERT_TRUE(h.wait({id}));
  const Stream& s = h.stream(id);
  EXPECT_EQ(s.ids, greedy_reference(hashed_logits, 64, prompt, 4));
  EXPECT_EQ(progress_of(s), (std::vector<int32_t>{8, 16, 24, 32, 40, 45}));
  size_t last_progress = 0, first_token = 0;
  for (size_t i = 0; i < s.events.size(); ++i) {
    const EngineEvent& e = s.events[i];
    if (e.type == EventType::kProgress) {
      last_progress = i;
      EXPECT_EQ(e.usage.prompt_tokens, 45);
      EXPECT_EQ(e.usage.cached_tokens, 0);
      EXPECT_TRUE(e.tokens.empty());
    }
    if (e.type == EventType::kFirstToken) first_token = i;
  }
  EXPECT_LT(last_progress, first_token);

  // The same prompt again: 44 of its tokens come from the prefix cache, the rest takes one step.
  const std::string again = h.submit_ok(greedy_request(prompt, 4));
  const std::string short_one = h.submit_ok(greedy_request(prompt_of(6, 1), 4));
  ASSERT_TRUE(h.wait({again, short_one}));
  EXPECT_EQ(h.stream(again).final_event.usage.cached_tokens, 44);
  EXPECT_EQ(progress_of(h.stream(again)), std::vector<int32_t>{});
  EXPECT_EQ(progress_of(h.stream(short_one)), std::vector<int32_t>{});
  EXPECT_EQ(h.stream(again).ids, s.ids);
}

// Progress is due an interval after the prefill started: a long interval leaves a prompt read in a
// few fast steps without any, and a negative one turns it off.
TEST(Engine, ProgressWaitsForItsInterval) {
  for (double interval : {60'000.0, -1.0}) {
    EngineConfig cfg;
    cfg.max_batched_tokens = 8;
    cfg.progress_interval_ms = interval;
    Harness h(cfg);
    const std::string id = h.submit_ok(greedy_request(prompt_of(45, 5), 2));
    ASSERT_TRUE(h.wait({id}));
    EXPECT_EQ(progress_of(h.stream(id)), std::vector<int32_t>{}) << interval;
    EXPECT_EQ(h.stream(id).ids.size(), 2u);
  }
}

TEST(Engine, RunningStreamsKeepFlowingDuringLongPrefill) {
  EngineConfig cfg;
  cfg.max_batched_tokens = 16;
  FakeRunnerOptions ro;
  ro.step_delay = 2ms;
  Harness h(cfg, ro);
  const std::string a = h.submit_ok(greedy_request(prompt_of(4, 6), 60));
  ASSERT_TRUE(h.wait_tokens(a, 2));
  const std::string b = h.submit_ok(greedy_request(prompt_of(200, 7), 2));
  ASSERT_TRUE(h.wait({a, b}));
  std::lock_guard lock(h.runner().mu);
  int prefill_steps = 0, full_steps = 0;
  for (const StepRecord& st : h.runner().steps) {
    bool has_prefill = false, has_decode = false;
    for (const auto& s : st.seqs) {
      has_prefill |= s.n_tokens > 1 && s.n_past > 0;
      has_decode |= s.n_tokens == 1;
    }
    if (has_prefill) {
      ++prefill_steps;
      EXPECT_TRUE(has_decode);
      full_steps += st.n_tokens == 16;  // decode first, the prefill chunk fills the rest of the budget
    }
  }
  EXPECT_GE(prefill_steps, 10);
  EXPECT_GE(full_steps, prefill_steps - 1);  // all but the prompt's last chunk
}

// A KV pool far too small for all requests at once forces preemptions; every request still gets
// exactly the tokens it gets with a large pool (greedy and seeded sampling).
TEST(Engine, PreemptionResumesWithIdenticalTokens) {
  auto make = [](int i) {
    GenerateRequest r = greedy_request(prompt_of(10 + i, 200 + i), 26);
    if (i % 2) {
      r.sampling.temperature = 1.0f;
      r.sampling.seed = 5 + i;
    }
    return r;
  };
  auto run = [&](int32_t kv_blocks, int64_t* preemptions, bool* saw_event) {
    EngineConfig cfg;
    cfg.kv_blocks_limit = kv_blocks;
    Harness h(cfg);
    std::vector<std::string> ids;
    for (int i = 0; i < 8; ++i) ids.push_back(h.submit_ok(make(i)));
    EXPECT_TRUE(h.wait(ids));
    std::vector<std::vector<int32_t>> out;
    for (const auto& id : ids) {
      out.push_back(h.stream(id).ids);
      for (EventType t : h.stream(id).types()) *saw_event |= t == EventType::kPreempted;
    }
    *preemptions = h.engine().stats().preemptions;
    EXPECT_EQ(h.engine().stats().kv_blocks_used, 0);
    return out;
  };
  int64_t p_big = 0, p_small = 0;
  bool e_big = false, e_small = false;
  const auto big = run(0, &p_big, &e_big);
  const auto small = run(12, &p_small, &e_small);  // 48 tokens; each request needs up to 44
  EXPECT_EQ(p_big, 0);
  EXPECT_GT(p_small, 0);
  EXPECT_TRUE(e_small);
  EXPECT_EQ(small, big);
}

TEST(Engine, PrefixCacheServesIdenticalTokens) {
  for (bool caching : {true, false}) {
    EngineConfig cfg;
    cfg.prefix_caching = caching;
    Harness h(cfg);
    const auto prompt = prompt_of(30, 9);
    const std::string a = h.submit_ok(greedy_request(prompt, 8));
    ASSERT_TRUE(h.wait({a}));
    const std::string b = h.submit_ok(greedy_request(prompt, 8));
    ASSERT_TRUE(h.wait({b}));
    EXPECT_EQ(h.stream(a).ids, h.stream(b).ids);
    EXPECT_EQ(h.stream(b).ids, greedy_reference(hashed_logits, 64, prompt, 8));
    EXPECT_EQ(h.stream(a).final_event.usage.cached_tokens, 0);
    EXPECT_EQ(h.stream(b).final_event.usage.cached_tokens, caching ? 28 : 0);  // 7 full blocks of 4
    const EngineStats st = h.engine().stats();
    EXPECT_EQ(st.prefix_hit_tokens, caching ? 28 : 0);
    EXPECT_EQ(st.prefix_query_tokens, 60);
  }
}

TEST(Engine, DeadlineWhileGeneratingAndWhileQueued) {
  EngineConfig cfg;
  cfg.max_seqs = 1;
  FakeRunnerOptions ro;
  ro.step_delay = 5ms;
  Harness h(cfg, ro);
  GenerateRequest running = greedy_request(prompt_of(4, 10), 500);
  running.deadline = std::chrono::steady_clock::now() + 150ms;
  const std::string a = h.submit_ok(running);
  ASSERT_TRUE(h.wait_tokens(a, 1));
  GenerateRequest queued = greedy_request(prompt_of(4, 11), 5);
  queued.deadline = std::chrono::steady_clock::now() + 40ms;
  const std::string b = h.submit_ok(queued);
  ASSERT_TRUE(h.wait({a, b}));
  EXPECT_EQ(h.stream(a).final_event.reason, FinishReason::kDeadline);
  EXPECT_GT(h.stream(a).final_event.usage.generated_tokens, 0);
  EXPECT_LT(h.stream(a).final_event.usage.generated_tokens, 500);
  EXPECT_EQ(h.stream(b).final_event.reason, FinishReason::kDeadline);
  EXPECT_EQ(h.stream(b).final_event.usage.generated_tokens, 0);
  EXPECT_EQ(h.stream(b).types(), (Types{EventType::kQueued, EventType::kFinished}));
}

TEST(Engine, CancelRunningAndQueuedFreesBlocks) {
  EngineConfig cfg;
  cfg.max_seqs = 1;
  FakeRunnerOptions ro;
  ro.step_delay = 2ms;
  Harness h(cfg, ro);
  const std::string a = h.submit_ok(greedy_request(prompt_of(20, 12), 800));
  const std::string b = h.submit_ok(greedy_request(prompt_of(20, 13), 800));
  ASSERT_TRUE(h.wait_tokens(a, 3));
  EXPECT_GT(h.engine().stats().kv_blocks_used, 0);
  EXPECT_TRUE(h.engine().cancel(b));
  EXPECT_TRUE(h.engine().cancel(a));
  ASSERT_TRUE(h.wait({a, b}));
  EXPECT_EQ(h.stream(a).final_event.reason, FinishReason::kCancelled);
  EXPECT_EQ(h.stream(b).final_event.reason, FinishReason::kCancelled);
  EXPECT_LT(h.stream(a).final_event.usage.generated_tokens, 800);
  EXPECT_EQ(h.engine().stats().kv_blocks_used, 0);
  EXPECT_FALSE(h.engine().cancel(a));  // finished
  EXPECT_FALSE(h.engine().cancel("no-such-request"));
}

TEST(Engine, CancelBeforeSchedulingStillEndsWithFinished) {
  Harness h;
  const std::string a = h.submit_ok(greedy_request(prompt_of(4, 14), 50));
  h.engine().cancel(a);
  ASSERT_TRUE(h.wait({a}));
  EXPECT_EQ(h.stream(a).events.back().type, EventType::kFinished);
}

// Issue 37: a cancel that arrived while a step ran was applied only to admitted requests; one for
// a request still in the inbox (submitted during the same step) was dropped, and the request ran
// to its end although its cancel had been answered `true`.
TEST(Engine, CancelOfARequestStillInTheInboxIsNotLost) {
  Harness h;
  h.runner().hold = true;
  const std::string a = h.submit_ok(greedy_request(prompt_of(8, 15), 50));
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (h.runner().steps_started == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  ASSERT_GT(h.runner().steps_started, 0);
  // The engine thread is inside a step now: b waits in the inbox when its cancel comes.
  const std::string b = h.submit_ok(greedy_request(prompt_of(8, 16), 500));
  const std::string c = h.submit_ok(greedy_request(prompt_of(8, 17), 500));
  EXPECT_TRUE(h.engine().cancel(b));
  EXPECT_TRUE(h.engine().cancel(a));
  h.runner().hold = false;
  ASSERT_TRUE(h.wait({a, b, c}));
  EXPECT_EQ(h.stream(a).final_event.reason, FinishReason::kCancelled);
  EXPECT_EQ(h.stream(b).final_event.reason, FinishReason::kCancelled);
  EXPECT_EQ(h.stream(b).final_event.usage.generated_tokens, 0);
  EXPECT_EQ(h.stream(c).final_event.reason, FinishReason::kLength);  // others are not touched
  EXPECT_EQ(h.engine().stats().kv_blocks_used, 0);
}

void expect_rejected(Engine& e, GenerateRequest r, ErrorCode code, const std::string& names) {
  const SubmitResult s = e.submit(std::move(r));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.code, code) << s.message;
  EXPECT_NE(s.message.find(names), std::string::npos) << "message '" << s.message << "' should name " << names;
}

TEST(Engine, SubmitValidatesEveryField) {
  EngineConfig cfg;
  cfg.kv_blocks_limit = 10;  // 40 tokens
  Harness h(cfg);
  Engine& e = h.engine();
  auto base = [] { return greedy_request({1, 5, 6}, 4); };
  auto with = [&](auto mutate) {
    GenerateRequest r = base();
    mutate(r);
    return r;
  };
  const auto bad = ErrorCode::kInvalidArgument;
  expect_rejected(e, with([](auto& r) { r.sampling.temperature = -0.1f; }), bad, "temperature");
  expect_rejected(e, with([](auto& r) { r.sampling.temperature = 101; }), bad, "temperature");
  expect_rejected(e, with([](auto& r) { r.sampling.temperature = NAN; }), bad, "temperature");
  expect_rejected(e, with([](auto& r) { r.sampling.top_p = 0; }), bad, "top_p");
  expect_rejected(e, with([](auto& r) { r.sampling.top_p = 1.5f; }), bad, "top_p");
  expect_rejected(e, with([](auto& r) { r.sampling.top_k = -1; }), bad, "top_k");
  expect_rejected(e, with([](auto& r) { r.sampling.min_p = 2; }), bad, "min_p");
  expect_rejected(e, with([](auto& r) { r.sampling.repetition_penalty = 0; }), bad, "repetition_penalty");
  expect_rejected(e, with([](auto& r) { r.sampling.presence_penalty = 150; }), bad, "presence_penalty");
  expect_rejected(e, with([](auto& r) { r.sampling.frequency_penalty = -150; }), bad, "frequency_penalty");
  expect_rejected(e, with([](auto& r) { r.sampling.penalty_last_n = -2; }), bad, "penalty_last_n");
  expect_rejected(e, with([](auto& r) { r.sampling.logit_bias = {{64, 1.0f}}; }), bad, "logit_bias");
  expect_rejected(e, with([](auto& r) { r.sampling.logit_bias = {{3, 1000.0f}}; }), bad, "logit_bias");
  expect_rejected(e, with([](auto& r) { r.logprobs = 21; }), bad, "logprobs");
  expect_rejected(e, with([](auto& r) { r.logprobs = -2; }), bad, "logprobs");
  expect_rejected(e, with([](auto& r) { r.stop.max_tokens = -1; }), bad, "max_tokens");
  expect_rejected(e, with([](auto& r) { r.stop.min_tokens = 5; }), bad, "min_tokens");
  expect_rejected(e, with([](auto& r) { r.stop.stop_token_ids = {-1}; }), bad, "stop_token_ids");
  expect_rejected(e, with([](auto& r) { r.stop.stop_strings = {""}; }), bad, "stop_strings");
  expect_rejected(e, with([](auto& r) { r.stop.stop_strings = {"\xff"}; }), bad, "stop_strings");
  expect_rejected(e, with([](auto& r) { r.priority = 5000; }), bad, "priority");
  expect_rejected(e, with([](auto& r) { r.prompt_ids = {1, 99}; }), bad, "prompt_ids[1]");
  expect_rejected(e, with([](auto& r) { r.prompt_ids.clear(); }), bad, "prompt");
  expect_rejected(e, with([](auto& r) { r.id = "bad id!"; }), bad, "id");
  expect_rejected(e, with([](auto& r) { r.id = std::string(65, 'a'); }), bad, "id");
  // Can never fit: the context (1024) names it, the cache (40 tokens) names it.
  expect_rejected(e, with([](auto& r) { r.stop.max_tokens = 1022; }), bad, "context length of 1024");
  expect_rejected(e, with([](auto& r) { r.stop.max_tokens = 38; }), ErrorCode::kOutOfMemory, "KV cache of 40 tokens");
  // Text prompts are tokenized; too long reports the token count.
  EngineStats st = e.stats();
  EXPECT_EQ(st.requests_rejected, 27);
  GenerateRequest text;
  text.prompt_text = "abc";
  text.stop.max_tokens = 2;
  text.id = "client.chosen-ID_1";
  const SubmitResult ok = e.submit(text);
  ASSERT_TRUE(ok.ok) << ok.message;
  EXPECT_EQ(ok.id, "client.chosen-ID_1");
  EXPECT_EQ(ok.prompt_tokens, 4);  // BOS + a b c
  ASSERT_TRUE(h.wait({ok.id}));
  h.stream(ok.id) = Stream{};
  const SubmitResult dup_after = e.submit(text);  // finished ids may be reused
  EXPECT_TRUE(dup_after.ok) << dup_after.message;
  ASSERT_TRUE(h.wait({ok.id}));
}

// Issue 37: a prompt longer than the KV cache was capacity_exceeded where the cache was smaller
// than the prompt limit and "prompt_text: ... exceed the limit" where it was larger, and named by
// max_tokens when max_tokens was set. The prompt limit is the least of max_prompt_tokens, the
// context and the KV cache: one condition, one answer, naming the wire's field `prompt`.
TEST(Engine, APromptLongerThanTheKvCacheGetsOneAnswer) {
  EngineConfig cfg;
  cfg.kv_blocks_limit = 10;  // 40 tokens; the context is 1024
  Harness h(cfg);
  EXPECT_EQ(h.engine().max_prompt_tokens(), 40);
  EXPECT_EQ(h.engine().kv_capacity_tokens(), 40);
  const auto submit_text = [&](Harness& on, size_t letters, int32_t max_tokens) {
    GenerateRequest r;
    r.prompt_text = std::string(letters, 'a');  // BOS + one token per letter
    r.stop.max_tokens = max_tokens;
    return on.engine().submit(std::move(r));
  };
  for (const int32_t max_tokens : {0, 2}) {
    const SubmitResult s = submit_text(h, 44, max_tokens);
    EXPECT_FALSE(s.ok);
    EXPECT_EQ(s.code, ErrorCode::kInvalidArgument) << s.message;
    EXPECT_EQ(s.message, "prompt: 45 prompt tokens exceed the limit of 40") << max_tokens;
    EXPECT_EQ(s.prompt_tokens, 45);
  }
  GenerateRequest ids;
  ids.prompt_ids.assign(45, 3);
  EXPECT_EQ(h.engine().submit(ids).message, "prompt_ids: 45 prompt tokens exceed the limit of 40");
  // A smaller max_prompt_tokens is the limit then.
  EngineConfig limited = cfg;
  limited.max_prompt_tokens = 30;
  Harness g(limited);
  EXPECT_EQ(submit_text(g, 34, 2).message, "prompt: 35 prompt tokens exceed the limit of 30");
}

TEST(Engine, UnsetMaxTokensGeneratesUntilTheContextIsFull) {
  FakeRunnerOptions ro;
  ro.context_length = 24;
  Harness h(EngineConfig{}, ro);
  Engine& e = h.engine();
  const std::string id = h.submit_ok(greedy_request({1, 5, 6, 7, 8}, /*max_tokens=*/0));
  ASSERT_TRUE(h.wait({id}));
  EXPECT_EQ(h.stream(id).final_event.reason, FinishReason::kLength);
  EXPECT_EQ(h.stream(id).ids.size(), 24u - 5u);
  // An explicit max_tokens that can never fit says by how much and what does fit.
  expect_rejected(e, greedy_request({1, 5, 6, 7, 8}, 22), ErrorCode::kInvalidArgument, "context length of 24 tokens by 3");
  expect_rejected(e, greedy_request({1, 5, 6, 7, 8}, 22), ErrorCode::kInvalidArgument, "at most 19 fit");
  // A prompt that fills the context leaves nothing to generate, even unset.
  expect_rejected(e, greedy_request(std::vector<int32_t>(24, 5), 0), ErrorCode::kInvalidArgument, "no room to generate");
  // With max_tokens unset, min_tokens is checked against the room left after the prompt (19 here).
  GenerateRequest too_many = greedy_request({1, 5, 6, 7, 8}, 0);
  too_many.stop.min_tokens = 20;
  expect_rejected(e, too_many, ErrorCode::kInvalidArgument, "min_tokens: 20 exceeds the 19 tokens left");
  GenerateRequest fits = greedy_request({1, 5, 6, 7, 8}, 0);
  fits.stop.min_tokens = 19;
  const std::string fits_id = h.submit_ok(fits);
  ASSERT_TRUE(h.wait({fits_id}));
  EXPECT_EQ(h.stream(fits_id).ids.size(), 19u);
}

TEST(Engine, DuplicateLiveIdRejectedAndOverloadHasRetryHint) {
  EngineConfig cfg;
  cfg.max_seqs = 1;
  cfg.max_queued = 2;
  FakeRunnerOptions ro;
  ro.step_delay = 5ms;
  Harness h(cfg, ro);
  GenerateRequest r = greedy_request(prompt_of(4, 20), 100);
  r.id = "first";
  ASSERT_EQ(h.submit_ok(r), "first");
  ASSERT_TRUE(h.wait_tokens("first", 1));
  const SubmitResult dup = h.engine().submit(r);
  EXPECT_FALSE(dup.ok);
  EXPECT_NE(dup.message.find("already"), std::string::npos);
  const std::string q1 = h.submit_ok(greedy_request(prompt_of(4, 21), 3));
  const std::string q2 = h.submit_ok(greedy_request(prompt_of(4, 22), 3));
  const SubmitResult over = h.engine().submit(greedy_request(prompt_of(4, 23), 3));
  EXPECT_FALSE(over.ok);
  EXPECT_EQ(over.code, ErrorCode::kOverloaded);
  EXPECT_GT(over.retry_after_ms, 0);
  EXPECT_NE(over.message.find("max_queued"), std::string::npos);
  h.engine().cancel("first");
  ASSERT_TRUE(h.wait({"first", q1, q2}));
}

TEST(Engine, RunnerFailureFailsTheStepAndEngineKeepsServing) {
  Harness h;
  {
    std::lock_guard lock(h.runner().mu);
    h.runner().fail_steps = 1;
  }
  const std::string a = h.submit_ok(greedy_request(prompt_of(5, 30), 5));
  ASSERT_TRUE(h.wait({a}));
  const Stream& s = h.stream(a);
  ASSERT_GE(s.events.size(), 2u);
  const EngineEvent& err = s.events[s.events.size() - 2];
  EXPECT_EQ(err.type, EventType::kError);
  EXPECT_EQ(err.error_code, ErrorCode::kDevice);
  EXPECT_NE(err.error_message.find("injected"), std::string::npos);
  EXPECT_EQ(s.final_event.reason, FinishReason::kError);
  const std::string b = h.submit_ok(greedy_request(prompt_of(5, 30), 5));
  ASSERT_TRUE(h.wait({b}));
  EXPECT_EQ(h.stream(b).final_event.reason, FinishReason::kLength);
  EXPECT_EQ(h.stream(b).ids, greedy_reference(hashed_logits, 64, prompt_of(5, 30), 5));
  EXPECT_EQ(h.engine().stats().kv_blocks_used, 0);
}

// Scripted logits: the model spells a fixed text, one letter per token; id 2 (EOS) afterwards.
LogitsFn spell(const std::string& text, int32_t prompt_len) {
  return [text, prompt_len](std::span<const int32_t> history, std::span<float> logits) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    const size_t i = history.size() - prompt_len;
    int32_t id = 2;
    if (i < text.size()) id = text[i] == ' ' ? 29 : text[i] == '.' ? 30 : 3 + (text[i] - 'a');
    logits[id] = 10.0f;
  };
}

TEST(Engine, StopStringsAcrossTokensAndEos) {
  Harness h({}, {}, spell("hello world. bye", 2));
  GenerateRequest r = greedy_request({1, 5}, 40, false);
  r.stop.stop_strings = {"o w", "zzz"};
  const std::string a = h.submit_ok(r);
  GenerateRequest plain = greedy_request({1, 6}, 40, false);
  const std::string b = h.submit_ok(plain);
  ASSERT_TRUE(h.wait({a, b}));
  EXPECT_EQ(h.stream(a).text, "hell");
  EXPECT_EQ(h.stream(a).final_event.reason, FinishReason::kStop);
  EXPECT_EQ(h.stream(a).ids.size(), 7u);  // up to the 'w' that completed "o w"
  EXPECT_EQ(h.stream(b).text, "hello world. bye");
  EXPECT_EQ(h.stream(b).final_event.reason, FinishReason::kStop);  // EOS
  EXPECT_EQ(h.stream(b).ids.back(), 2);
}

TEST(Engine, MinTokensSuppressesEos) {
  Harness h({}, {}, spell("", 2));  // EOS is always the argmax
  GenerateRequest r = greedy_request({1, 5}, 40, false);
  r.stop.min_tokens = 5;
  r.logprobs = -1;
  const std::string a = h.submit_ok(r);
  ASSERT_TRUE(h.wait({a}));
  const auto& ids = h.stream(a).ids;
  ASSERT_EQ(ids.size(), 6u);
  for (size_t i = 0; i < 5; ++i) EXPECT_NE(ids[i], 2);
  EXPECT_EQ(ids[5], 2);
}

// 1,000 random requests with random cancels and a small KV pool: every stream ends with exactly
// one kFinished, nothing is left in use, and greedy requests still match the reference.
TEST(Engine, RandomLoadLeavesNoBlocksInUse) {
  EngineConfig cfg;
  cfg.kv_blocks_limit = 24;  // 96 tokens
  cfg.max_batched_tokens = 32;
  cfg.max_queued = 2000;
  Harness h(cfg);
  std::mt19937 rng(99);
  const auto shared_prefix = prompt_of(16, 1000);
  std::vector<std::string> ids;
  std::map<std::string, std::pair<std::vector<int32_t>, int32_t>> greedy;
  for (int i = 0; i < 1000; ++i) {
    auto prompt = rng() % 2 ? shared_prefix : prompt_of(1, 0);
    const int32_t extra = static_cast<int32_t>(rng() % 30);
    for (int32_t k = 0; k < extra; ++k) prompt.push_back(3 + static_cast<int32_t>(rng() % 60));
    GenerateRequest r = greedy_request(prompt, 1 + static_cast<int32_t>(rng() % 16));
    if (rng() % 3 == 0) {
      r.sampling.temperature = 0.8f;
      r.sampling.seed = rng();
    }
    const std::string id = h.submit_ok(r);
    ids.push_back(id);
    if (r.sampling.temperature == 0) greedy[id] = {prompt, r.stop.max_tokens};
    if (rng() % 10 == 0) h.engine().cancel(ids[rng() % ids.size()]);
    if (i % 50 == 0) h.drain();
  }
  ASSERT_TRUE(h.wait(ids, 60s));
  int cancelled = 0;
  for (const auto& id : ids) {
    const Stream& s = h.stream(id);
    ASSERT_EQ(s.events.back().type, EventType::kFinished);
    const Types types = s.types();
    EXPECT_EQ(std::count(types.begin(), types.end(), EventType::kFinished), 1);
    if (s.final_event.reason == FinishReason::kCancelled) {
      ++cancelled;
    } else if (auto it = greedy.find(id); it != greedy.end()) {
      EXPECT_EQ(s.ids, greedy_reference(hashed_logits, 64, it->second.first, it->second.second));
    }
  }
  EXPECT_GT(cancelled, 0);
  const EngineStats st = h.engine().stats();
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_EQ(st.running, 0);
  EXPECT_EQ(st.waiting, 0);
  EXPECT_EQ(st.requests_finished, 1000);
  EXPECT_GT(st.preemptions, 0);
  EXPECT_GT(st.prefix_hit_tokens, 0);
  EXPECT_LE(st.kv_blocks_cached, st.kv_blocks_total);
}

TEST(Engine, DestructorCancelsLiveRequestsAndJoins) {
  const auto start = std::chrono::steady_clock::now();
  {
    FakeRunnerOptions ro;
    ro.step_delay = 1ms;
    Harness h({}, ro);
    for (int i = 0; i < 8; ++i) h.submit_ok(greedy_request(prompt_of(8, 40 + i), 900));
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(Engine, RejectsBadConfigAndNullRunner) {
  FakeTokenizer tok = FakeTokenizer::letters();
  EngineConfig cfg;
  cfg.max_seqs = 0;
  EXPECT_THROW(Engine(std::make_unique<FakeRunner>(FakeRunnerOptions{}), tok, cfg), Error);
  EXPECT_THROW(Engine(nullptr, tok, EngineConfig{}), Error);
}

TEST(Engine, EventAndReasonNames) {
  EXPECT_EQ(event_type_name(EventType::kFirstToken), "first_token");
  EXPECT_EQ(event_type_name(EventType::kPreempted), "preempted");
  EXPECT_EQ(finish_reason_name(FinishReason::kDeadline), "deadline");
  EXPECT_EQ(finish_reason_name(FinishReason::kLength), "length");
}

}  // namespace
}  // namespace vks::test
