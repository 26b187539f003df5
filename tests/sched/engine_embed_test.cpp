// Embeddings through the engine on the real stories260K model: each vector equals the pooled
// final-normed hidden states of the CPU oracle (CpuModel, token by token; pooled here in double),
// is bit-identical alone, batched with a running generation, chunked and under KV pressure, and
// bad inputs are rejected with a code. Built twice: with the CPU runner (label unit) and with
// make_runner on a Vulkan device (label vulkan, VKS_ENGINE_TEST_VULKAN).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <thread>

#include "engine/cpu/cpu_model.h"
#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "tests/common/test_models.h"
#include "tests/common/vulkan_skip.h"
#ifdef VKS_ENGINE_TEST_VULKAN
#include "engine/vulkan/runner/runner_factory.h"
#else
#include "engine/cpu/cpu_runner.h"
#endif

namespace vks::test {
namespace {

using namespace std::chrono_literals;
using Vectors = std::vector<std::vector<float>>;

constexpr int32_t kBlockSize = 4;
#ifdef VKS_ENGINE_TEST_VULKAN
// The Vulkan runner keeps K and V in F16 (the CPU oracle in F32), which moves these vectors by up
// to ~2e-4 (normalized) and ~5e-3 (raw, |x| up to ~8); compared by relative L2 error instead.
constexpr bool kRelative = true;
constexpr double kTolerance = 2e-3;
#else
constexpr bool kRelative = false;
constexpr double kTolerance = 1e-4;  // max absolute difference
#endif

const char* const kTexts[] = {
    "Once upon a time",
    "The cat sat on the mat.",
    "Lily and Tom went to the park. They saw a big red ball and played with it all day. Then the sun went "
    "down and they walked home, happy and tired, to eat dinner with mom and dad.",
};

// What the engine sent for one request.
struct Outcome {
  bool finished = false;
  FinishReason reason = FinishReason::kError;
  Vectors embeddings;
  std::vector<int32_t> ids;  // generated (generate requests)
  Usage usage;
  std::string error;
};

class Collector {
 public:
  explicit Collector(Engine& engine) : engine_(engine) {}
  void drain() {
    std::vector<EngineEvent> ev;
    engine_.poll_events(ev);
    for (EngineEvent& e : ev) {
      Outcome& o = out_[e.request_id];
      EXPECT_FALSE(o.finished) << "event after kFinished for " << e.request_id;
      for (const GeneratedToken& t : e.tokens) o.ids.push_back(t.id);
      if (e.type == EventType::kError) o.error = e.error_message;
      if (e.type == EventType::kFinished) {
        o.finished = true;
        o.reason = e.reason;
        o.usage = e.usage;
        o.embeddings = std::move(e.embeddings);
      }
    }
  }
  template <class Pred>
  bool wait(Pred pred) {
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < until) {
      drain();
      if (pred()) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
  Outcome& operator[](const std::string& id) { return out_[id]; }
  bool finished(const std::string& id) {
    return wait([&] { return out_[id].finished; });
  }

 private:
  Engine& engine_;
  std::map<std::string, Outcome> out_;
};

class EmbedEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = LlamaModel::load(model_path("stories260K.gguf")).release();
    tok_ = Tokenizer::from_gguf(model_->file()).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete model_;
  }

  std::unique_ptr<Engine> make_engine(EngineConfig cfg = {}, int32_t num_blocks = 512) {
#ifdef VKS_ENGINE_TEST_VULKAN
    RunnerOptions o;
    o.allow_cpu_fallback = false;
    o.block_size = kBlockSize;
    o.num_blocks = num_blocks;
    o.max_step_tokens = 256;
    o.max_step_seqs = 32;
    std::unique_ptr<ModelRunner> runner;
    try {
      runner = make_runner(*model_, o);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kDevice || e.code() == ErrorCode::kNotFound) return nullptr;  // skipped by the caller
      throw;
    }
#else
    CpuRunnerOptions o;
    o.block_size = kBlockSize;
    o.num_blocks = num_blocks;
    o.threads = 2;
    auto runner = std::make_unique<CpuRunner>(*model_, o);
#endif
    return std::make_unique<Engine>(std::move(runner), *tok_, cfg);
  }

  // The oracle: CpuModel runs the tokens one by one; the hidden states after the final norm are
  // pooled here in double, independently of engine/model/pooling.
  static std::vector<float> reference(const std::vector<int32_t>& ids, Pooling pooling, bool normalize) {
    CpuModel cpu(*model_, 2);
    const size_t dim = model_->config().dim;
    std::vector<double> acc(dim, 0.0);
    for (int32_t pos = 0; pos < static_cast<int32_t>(ids.size()); ++pos) {
      cpu.forward(ids[static_cast<size_t>(pos)], pos);
      const std::vector<float> h = cpu.final_hidden();
      const bool take = pooling == Pooling::kMean || (pooling == Pooling::kCls && pos == 0) ||
                        (pooling == Pooling::kLast && pos + 1 == static_cast<int32_t>(ids.size()));
      for (size_t i = 0; take && i < dim; ++i) acc[i] = pooling == Pooling::kMean ? acc[i] + h[i] : h[i];
    }
    if (pooling == Pooling::kMean) {
      for (double& v : acc) v /= static_cast<double>(ids.size());
    }
    double norm = 0;
    for (double v : acc) norm += v * v;
    norm = std::sqrt(norm);
    std::vector<float> out(dim);
    for (size_t i = 0; i < dim; ++i) out[i] = static_cast<float>(normalize ? acc[i] / norm : acc[i]);
    return out;
  }

  static EmbedRequest texts_request(std::optional<Pooling> pooling = std::nullopt, bool normalize = true) {
    EmbedRequest r;
    r.texts.assign(std::begin(kTexts), std::end(kTexts));
    r.pooling = pooling;
    r.normalize = normalize;
    return r;
  }

  // Submits and waits; the request must succeed.
  static Vectors embed_ok(Engine& engine, Collector& c, EmbedRequest r) {
    const SubmitResult s = engine.submit_embed(std::move(r));
    EXPECT_TRUE(s.ok) << s.message;
    if (!s.ok) return {};
    EXPECT_TRUE(c.finished(s.id));
    const Outcome& o = c[s.id];
    EXPECT_EQ(o.reason, FinishReason::kStop) << o.error;
    EXPECT_EQ(o.usage.prompt_tokens, s.prompt_tokens);
    return o.embeddings;
  }

  static LlamaModel* model_;
  static Tokenizer* tok_;
};
LlamaModel* EmbedEngine::model_ = nullptr;
Tokenizer* EmbedEngine::tok_ = nullptr;

#define MAKE_ENGINE_OR_SKIP(var, ...)                                     \
  auto var = make_engine(__VA_ARGS__);                                    \
  if (!var) VKS_SKIP_WITHOUT_VULKAN("no Vulkan device: test skipped")

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
  return d;
}

// ||a - b|| / ||b||
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// Every pooling, normalized or not, against the oracle (kTolerance); the longest text is prefilled in
// chunks (max_batched_tokens 16). The poolings give different vectors, a text's cosine with itself
// is 1, and stories260K (a generative llama without pooling_type) defaults to mean.
TEST_F(EmbedEngine, MatchesCpuReferenceForEveryPooling) {
  EngineConfig cfg;
  cfg.max_batched_tokens = 16;
  MAKE_ENGINE_OR_SKIP(engine, cfg);
  Collector c(*engine);
  std::vector<std::vector<int32_t>> ids;
  for (const char* t : kTexts) ids.push_back(tok_->encode(t, true));
  ASSERT_GT(ids[2].size(), 32u) << "the long text must span several chunks";

  std::map<Pooling, Vectors> by_pooling;
  for (Pooling p : {Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    for (bool normalize : {true, false}) {
      const Vectors got = embed_ok(*engine, c, texts_request(p, normalize));
      ASSERT_EQ(got.size(), ids.size());
      for (size_t i = 0; i < ids.size(); ++i) {
        ASSERT_EQ(got[i].size(), model_->config().dim);
        const std::vector<float> want = reference(ids[i], p, normalize);
        const double error = kRelative ? relative_error(got[i], want) : max_abs_diff(got[i], want);
        EXPECT_LE(error, kTolerance) << pooling_name(p) << " normalize " << normalize << " input " << i;
        if (normalize) {
          EXPECT_NEAR(cosine(got[i], got[i]), 1.0, 1e-6);
          double norm = 0;
          for (float v : got[i]) norm += double(v) * v;
          EXPECT_NEAR(norm, 1.0, 1e-5);
        }
      }
      if (normalize) by_pooling[p] = got;
    }
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_GT(max_abs_diff(by_pooling[Pooling::kMean][i], by_pooling[Pooling::kCls][i]), 1e-3) << i;
    EXPECT_GT(max_abs_diff(by_pooling[Pooling::kMean][i], by_pooling[Pooling::kLast][i]), 1e-3) << i;
    EXPECT_GT(max_abs_diff(by_pooling[Pooling::kCls][i], by_pooling[Pooling::kLast][i]), 1e-3) << i;
  }
  // The same text twice in one request: identical vectors, cosine 1.
  EmbedRequest twice;
  twice.texts = {kTexts[1], kTexts[0], kTexts[1]};
  const Vectors t = embed_ok(*engine, c, twice);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], t[2]);
  EXPECT_NEAR(cosine(t[0], t[2]), 1.0, 1e-6);
  EXPECT_LT(cosine(t[0], t[1]), 0.9999);
  // No pooling_type in the file: mean.
  EXPECT_EQ(model_->config().pooling_type, -1);
  EXPECT_EQ(embed_ok(*engine, c, texts_request()), by_pooling[Pooling::kMean]);
  // Token ids give the same vectors as the texts they encode.
  EmbedRequest tokens;
  tokens.token_inputs = ids;
  EXPECT_EQ(embed_ok(*engine, c, tokens), by_pooling[Pooling::kMean]);
}

// Bit-identical alone, while a generation is decoding beside it (which keeps its own greedy
// tokens), and when the inputs compete for a small KV pool in small steps (chunked, preempted).
TEST_F(EmbedEngine, IdenticalAloneBatchedAndUnderKvPressure) {
  MAKE_ENGINE_OR_SKIP(engine);
  Collector c(*engine);
  EmbedRequest many;
  for (int k = 0; k < 4; ++k) {
    for (const char* t : kTexts) many.texts.push_back(t);
  }
  const Vectors alone = embed_ok(*engine, c, many);
  ASSERT_EQ(alone.size(), many.texts.size());

  GenerateRequest g;
  g.prompt_text = "Once upon a time";
  g.sampling.temperature = 0;
  g.stop.max_tokens = 80;
  g.stop.ignore_eos = true;
  const SubmitResult solo = engine->submit(g);
  ASSERT_TRUE(solo.ok) << solo.message;
  ASSERT_TRUE(c.finished(solo.id));
  const std::vector<int32_t> solo_ids = c[solo.id].ids;

  const SubmitResult gen = engine->submit(g);
  ASSERT_TRUE(gen.ok) << gen.message;
  ASSERT_TRUE(c.wait([&] { return c[gen.id].ids.size() >= 4; }));
  ASSERT_FALSE(c[gen.id].finished);
  const SubmitResult emb = engine->submit_embed(many);
  ASSERT_TRUE(emb.ok) << emb.message;
  ASSERT_TRUE(c.finished(emb.id));
  ASSERT_TRUE(c.finished(gen.id));
  EXPECT_EQ(c[emb.id].embeddings, alone) << "embeddings changed when batched with a generation";
  EXPECT_EQ(c[gen.id].ids, solo_ids) << "the generation changed when batched with embeddings";

  // A tight pool (24 blocks = 96 tokens: the generation needs 22, the long text 17) and 8-token
  // steps: the inputs are chunked, and preempted (then recomputed from position 0) whenever the
  // older generation needs a block.
  EngineConfig tight;
  tight.max_batched_tokens = 8;
  tight.max_seqs = 4;
  MAKE_ENGINE_OR_SKIP(small, tight, 24);
  Collector cs(*small);
  const SubmitResult gen2 = small->submit(g);
  ASSERT_TRUE(gen2.ok) << gen2.message;
  ASSERT_TRUE(cs.wait([&] { return cs[gen2.id].ids.size() >= 2; }));
  EXPECT_EQ(embed_ok(*small, cs, many), alone) << "embeddings changed with chunking and KV pressure";
  ASSERT_TRUE(cs.finished(gen2.id));
  EXPECT_EQ(cs[gen2.id].ids, solo_ids);
  EXPECT_GT(small->stats().preemptions, 0);
  EXPECT_EQ(small->stats().kv_blocks_used, 0) << "embed inputs must not keep KV blocks";
}

// Issue 37: each input of an embed request counted against max_queued, so one request of 2,048
// inputs (the documented maximum; max_queued is 256) locked every other client out with
// `overloaded`. A request is one admission however many inputs it has.
TEST_F(EmbedEngine, ABatchOfManyInputsCountsAsOneAdmission) {
  EngineConfig cfg;
  cfg.max_queued = 4;
  MAKE_ENGINE_OR_SKIP(engine, cfg);
  Collector c(*engine);
  EmbedRequest big;
  for (int k = 0; k < 32; ++k) big.texts.push_back(kTexts[2]);
  const SubmitResult first = engine->submit_embed(big);
  ASSERT_TRUE(first.ok) << first.message;
  GenerateRequest g;
  g.prompt_text = "Once upon a time";
  g.stop.max_tokens = 4;
  const SubmitResult gen = engine->submit(g);
  EXPECT_TRUE(gen.ok) << gen.message;
  const SubmitResult second = engine->submit_embed(big);
  EXPECT_TRUE(second.ok) << second.message;
  ASSERT_TRUE(c.finished(first.id));
  EXPECT_EQ(c[first.id].embeddings.size(), big.texts.size());
  if (gen.ok) {
    EXPECT_TRUE(c.finished(gen.id));
  }
  if (second.ok) {
    EXPECT_TRUE(c.finished(second.id));
  }
}

// Inputs that cannot run are rejected at submit with a code naming the input.
TEST_F(EmbedEngine, RejectsBadInputs) {
  EngineConfig cfg;
  cfg.max_prompt_tokens = 64;
  MAKE_ENGINE_OR_SKIP(engine, cfg);
  Collector c(*engine);

  EmbedRequest too_long;
  too_long.texts = {"short", std::string(kTexts[2]) + " " + kTexts[2]};
  SubmitResult s = engine->submit_embed(too_long);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message.find("input.1"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("exceed"), std::string::npos) << s.message;
  EXPECT_GT(s.prompt_tokens, 64);

  EmbedRequest long_ids;
  long_ids.token_inputs = {{1, 2, 3}, std::vector<int32_t>(65, 5)};
  s = engine->submit_embed(long_ids);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("tokens.1"), std::string::npos) << s.message;
  EXPECT_EQ(s.prompt_tokens, 65);

  EmbedRequest none;
  s = engine->submit_embed(none);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.code, ErrorCode::kInvalidArgument);

  EmbedRequest empty_ids;
  empty_ids.token_inputs = {{1}, {}};
  s = engine->submit_embed(empty_ids);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("tokens.1"), std::string::npos) << s.message;

  EmbedRequest bad_id;
  bad_id.token_inputs = {{1, 100000}};
  s = engine->submit_embed(bad_id);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("tokens.0.1"), std::string::npos) << s.message;

  EmbedRequest bad_utf8;
  bad_utf8.texts = {"ok", "\xff\xfe"};
  s = engine->submit_embed(bad_utf8);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("input.1"), std::string::npos) << s.message;

  EmbedRequest too_many;
  too_many.token_inputs.assign(kMaxEmbedInputs + 1, {1});
  s = engine->submit_embed(too_many);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.code, ErrorCode::kInvalidArgument);

  // The engine still serves, and a live id cannot be reused.
  EmbedRequest ok;
  ok.id = "emb-1";
  ok.texts = {"fine"};
  s = engine->submit_embed(ok);
  ASSERT_TRUE(s.ok) << s.message;
  ASSERT_TRUE(c.finished("emb-1"));
  EXPECT_EQ(c["emb-1"].embeddings.size(), 1u);
  EXPECT_EQ(engine->stats().requests_rejected, 7);
}

// Cancelling ends the request with kFinished(cancelled) and no vectors, and frees its blocks.
TEST_F(EmbedEngine, CancelEndsTheRequest) {
  EngineConfig cfg;
  cfg.max_batched_tokens = 8;
  cfg.max_seqs = 2;
  MAKE_ENGINE_OR_SKIP(engine, cfg);
  Collector c(*engine);
  EmbedRequest r;
  r.id = "emb-cancel";
  for (int k = 0; k < 40; ++k) r.texts.push_back(kTexts[2]);
  ASSERT_TRUE(engine->submit_embed(r).ok);
  EXPECT_TRUE(engine->cancel("emb-cancel"));
  ASSERT_TRUE(c.finished("emb-cancel"));
  EXPECT_EQ(c["emb-cancel"].reason, FinishReason::kCancelled);
  EXPECT_TRUE(c["emb-cancel"].embeddings.empty());
  EXPECT_FALSE(engine->cancel("emb-cancel"));
  ASSERT_TRUE(c.wait([&] { return engine->stats().kv_blocks_used == 0 && engine->stats().running == 0; }));
}

}  // namespace
}  // namespace vks::test
