#pragma once
// Test support: runs generate requests on a real model (stories260K on the CPU runner) and
// collects each one's text, tokens and how it ended.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/cpu/cpu_runner.h"
#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "tests/common/test_models.h"

namespace vks::test {

struct Outcome {
  std::string text;
  std::vector<int32_t> ids;
  FinishReason reason = FinishReason::kError;
  std::string error;
};

class ModelFixture {
 public:
  ModelFixture() {
    model_ = LlamaModel::load(model_path("stories260K.gguf"));
    tok_ = Tokenizer::from_gguf(model_->file());
  }
  const Tokenizer& tokenizer() const { return *tok_; }

  std::unique_ptr<Engine> engine(int32_t max_seqs = 16) const {
    CpuRunnerOptions o;
    o.block_size = 16;
    o.num_blocks = 1024;
    o.threads = 1;
    EngineConfig cfg;
    cfg.max_seqs = max_seqs;
    cfg.max_batched_tokens = 512;
    cfg.worker_threads = 2;
    cfg.max_queued = 4096;
    return std::make_unique<Engine>(std::make_unique<CpuRunner>(*model_, o), *tok_, cfg);
  }

  // Submits all (each must be accepted), waits for all to finish.
  std::vector<Outcome> run(Engine& engine, const std::vector<GenerateRequest>& reqs) const {
    using namespace std::chrono_literals;
    std::vector<std::string> ids;
    std::map<std::string, Outcome> out;
    for (const GenerateRequest& r : reqs) {
      SubmitResult s = engine.submit(r);
      EXPECT_TRUE(s.ok) << s.message;
      if (!s.ok) return {};
      ids.push_back(s.id);
    }
    const auto until = std::chrono::steady_clock::now() + 120s;
    size_t finished = 0;
    while (finished < ids.size() && std::chrono::steady_clock::now() < until) {
      std::vector<EngineEvent> ev;
      engine.poll_events(ev);
      for (const EngineEvent& e : ev) {
        Outcome& o = out[e.request_id];
        o.text += e.text;
        for (const GeneratedToken& t : e.tokens) o.ids.push_back(t.id);
        if (e.type == EventType::kError) o.error = e.error_message;
        if (e.type == EventType::kFinished) {
          o.reason = e.reason;
          ++finished;
        }
      }
      if (ev.empty()) std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(finished, ids.size()) << "requests did not finish in time";
    std::vector<Outcome> result;
    for (const auto& id : ids) result.push_back(out[id]);
    return result;
  }

 private:
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
};

inline GenerateRequest constrained(const std::string& prompt, float temperature, int32_t max_tokens, uint64_t seed) {
  GenerateRequest r;
  r.prompt_text = prompt;
  r.sampling.temperature = temperature;
  r.sampling.seed = seed;
  r.stop.max_tokens = max_tokens;
  return r;
}

}  // namespace vks::test
