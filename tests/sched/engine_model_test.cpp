// Invariance on the real stories260K model: a greedy request gives the same tokens alone, batched
// with 15 others, chunked, after forced preemptions and when served from the prefix cache, and those
// tokens equal llama2.c's reference. Built twice: with the CPU runner (label unit) and with
// make_runner on a Vulkan device (label vulkan, VKS_ENGINE_TEST_VULKAN).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#include "tests/sched/engine_harness.h"
#ifdef VKS_ENGINE_TEST_VULKAN
#include "engine/vulkan/runner/runner_factory.h"
#else
#include "engine/cpu/cpu_runner.h"
#endif

namespace vks::test {
namespace {

using namespace std::chrono_literals;

constexpr int32_t kBlockSize = 4;  // small blocks: more sharing and finer preemption

struct Reference {
  std::vector<int32_t> prompt, generated;
  std::string text;
};

Reference load_reference() {
  Reference r;
  std::ifstream f(model_path("reference/stories260K_greedy_once_upon_a_time_n64.ids"));
  std::string line;
  std::vector<std::vector<int32_t>> rows;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    rows.emplace_back();
    for (int32_t v; is >> v;) rows.back().push_back(v);
  }
  if (rows.size() == 2) {
    r.prompt = rows[0];
    r.generated = rows[1];
  }
  std::ifstream t(model_path("reference/stories260K_greedy_once_upon_a_time_n64.txt"));
  std::stringstream ss;
  ss << t.rdbuf();
  r.text = ss.str();
  return r;
}

class ModelEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    ref_ = load_reference();
    ASSERT_EQ(ref_.prompt.size(), 5u) << "reference ids missing under " << models_dir();
    ASSERT_EQ(ref_.generated.size(), 60u);
    model_ = LlamaModel::load(model_path("stories260K.gguf"));
    tok_ = Tokenizer::from_gguf(model_->file());
  }

  std::unique_ptr<ModelRunner> make(int32_t num_blocks) {
#ifdef VKS_ENGINE_TEST_VULKAN
    RunnerOptions o;
    o.allow_cpu_fallback = false;
    o.block_size = kBlockSize;
    o.num_blocks = num_blocks;
    o.max_step_tokens = 256;
    o.max_step_seqs = 32;
    try {
      return make_runner(*model_, o);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDevice) return nullptr;  // no Vulkan device: skipped below
      throw;
    }
#else
    CpuRunnerOptions o;
    o.block_size = kBlockSize;
    o.num_blocks = num_blocks;
    o.threads = 2;
    return std::make_unique<CpuRunner>(*model_, o);
#endif
  }

  // Runs the requests on one engine and returns each one's generated ids (and stats).
  std::vector<std::vector<int32_t>> run(const std::vector<GenerateRequest>& reqs, EngineConfig cfg,
                                        int32_t num_blocks = 512, EngineStats* stats = nullptr,
                                        std::vector<Usage>* usage = nullptr, bool one_by_one = false) {
    auto runner = make(num_blocks);
    if (!runner) {
      skipped_ = true;
      return {};
    }
    Engine engine(std::move(runner), *tok_, cfg);
    std::vector<std::string> ids;
    std::map<std::string, std::vector<int32_t>> out;
    std::map<std::string, bool> done;
    std::map<std::string, Usage> use;
    auto drain_until = [&](auto pred) {
      const auto until = std::chrono::steady_clock::now() + 50s;
      while (!pred() && std::chrono::steady_clock::now() < until) {
        std::vector<EngineEvent> ev;
        engine.poll_events(ev);
        for (const EngineEvent& e : ev) {
          for (const GeneratedToken& t : e.tokens) out[e.request_id].push_back(t.id);
          if (e.type == EventType::kFinished) {
            done[e.request_id] = true;
            use[e.request_id] = e.usage;
            EXPECT_NE(e.reason, FinishReason::kError);
          }
          if (e.type == EventType::kError) ADD_FAILURE() << e.error_message;
        }
        if (ev.empty()) std::this_thread::sleep_for(1ms);
      }
    };
    for (const GenerateRequest& r : reqs) {
      SubmitResult s = engine.submit(r);
      EXPECT_TRUE(s.ok) << s.message;
      ids.push_back(s.id);
      if (one_by_one) drain_until([&] { return done[s.id]; });
    }
    drain_until([&] {
      for (const auto& id : ids) {
        if (!done[id]) return false;
      }
      return true;
    });
    if (stats) *stats = engine.stats();
    std::vector<std::vector<int32_t>> result;
    for (const auto& id : ids) {
      EXPECT_TRUE(done[id]) << "request " << id << " did not finish";
      result.push_back(out[id]);
      if (usage) usage->push_back(use[id]);
    }
    return result;
  }

  GenerateRequest reference_request() const {
    GenerateRequest r = greedy_request(ref_.prompt, 60);
    r.logprobs = -1;
    return r;
  }

  Reference ref_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
  bool skipped_ = false;
};

#define SKIP_IF_NO_DEVICE()                                        \
  if (skipped_) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: test skipped")

TEST_F(ModelEngine, GreedyEqualsReferenceIdsAndText) {
  GenerateRequest r;
  r.prompt_text = "Once upon a time";
  r.sampling.temperature = 0;
  r.stop.max_tokens = 60;
  r.stop.ignore_eos = true;
  auto runner = make(512);
  if (!runner) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: test skipped");
  Engine engine(std::move(runner), *tok_, EngineConfig{});
  const SubmitResult s = engine.submit(r);
  ASSERT_TRUE(s.ok) << s.message;
  EXPECT_EQ(s.prompt_tokens, 5);
  std::vector<int32_t> ids;
  std::string text;
  bool done = false;
  const auto until = std::chrono::steady_clock::now() + 50s;
  while (!done && std::chrono::steady_clock::now() < until) {
    std::vector<EngineEvent> ev;
    engine.poll_events(ev);
    for (const EngineEvent& e : ev) {
      for (const GeneratedToken& t : e.tokens) ids.push_back(t.id);
      text += e.text;
      done |= e.type == EventType::kFinished;
    }
    if (ev.empty()) std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(ids, ref_.generated);
  std::string want = ref_.text;
  while (!want.empty() && want.back() == '\n') want.pop_back();
  EXPECT_EQ("Once upon a time" + text, want);
}

TEST_F(ModelEngine, StatsSplitEachStepIntoRunnerAndEngineTime) {
  // One request of 60 tokens after a 5-token prompt in one chunk: at least 60 steps (prefill with
  // the first token, then 59 decodes), each timed as a whole and inside the runner.
  EngineStats st;
  const auto out = run({reference_request()}, EngineConfig{}, 512, &st);
  SKIP_IF_NO_DEVICE();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_GE(st.steps, 60);
  EXPECT_LE(st.steps, 61);
  EXPECT_GT(st.runner_ms_total, 0.0);
  EXPECT_GE(st.step_ms_total, st.runner_ms_total) << "the runner's share cannot exceed the whole step";
}

TEST_F(ModelEngine, GreedyIsInvariantAcrossBatchingChunkingPreemptionAndCache) {
  const GenerateRequest target = reference_request();
  const auto alone = run({target}, EngineConfig{});
  SKIP_IF_NO_DEVICE();
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0], ref_.generated);

  // 15 companions with other prompts and sampling settings.
  std::vector<GenerateRequest> batch;
  const char* prompts[] = {"Lily went", "The dog", "Once upon a time, there was a big", "Tom and Sue",
                           "One day", "The sun was", "A little bird", "She saw a cat"};
  for (int i = 0; i < 15; ++i) {
    GenerateRequest r;
    r.prompt_text = prompts[i % 8];
    r.stop.max_tokens = 20 + 3 * i;
    r.stop.ignore_eos = true;
    r.sampling.temperature = i % 3 == 0 ? 0.0f : 0.8f;
    r.sampling.seed = 1000 + i;
    batch.push_back(r);
    if (i == 7) batch.push_back(target);
  }
  EngineStats st;
  const auto batched = run(batch, EngineConfig{}, 512, &st);
  ASSERT_EQ(batched.size(), 16u);
  EXPECT_EQ(batched[8], ref_.generated) << "batched with 15 others";

  EngineConfig chunked;
  chunked.max_batched_tokens = 3;  // the 5-token prompt is prefilled as 3 + 2
  chunked.max_seqs = 3;
  EXPECT_EQ(run({target}, chunked)[0], ref_.generated) << "chunked";
  const auto chunked_batch = run(batch, chunked);
  EXPECT_EQ(chunked_batch[8], ref_.generated) << "chunked and batched";

  // 30 blocks of 4 = 120 tokens for 16 requests of up to 70 tokens: forced preemptions.
  EngineStats small;
  const auto preempted = run(batch, EngineConfig{}, 30, &small);
  EXPECT_GT(small.preemptions, 0);
  EXPECT_EQ(preempted[8], ref_.generated) << "after preemption";
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(preempted[i], batched[i]) << "request " << i;
  EXPECT_EQ(small.kv_blocks_used, 0);

  // The same long prompt twice, one after the other: the second is served from the prefix cache.
  GenerateRequest longer = target;
  longer.prompt_ids = ref_.prompt;
  longer.prompt_ids.insert(longer.prompt_ids.end(), ref_.generated.begin(), ref_.generated.begin() + 20);
  longer.stop.max_tokens = 40;
  std::vector<Usage> usage;
  const auto cached = run({longer, longer}, EngineConfig{}, 512, nullptr, &usage, true);
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].cached_tokens, 0);
  EXPECT_EQ(usage[1].cached_tokens, 24);  // 6 full blocks of the 25-token prompt
  EXPECT_EQ(cached[0], cached[1]);
  EXPECT_EQ(cached[1], std::vector<int32_t>(ref_.generated.begin() + 20, ref_.generated.end()));
}

}  // namespace
}  // namespace vks::test
