#pragma once
// Runs requests to completion on a real engine (a model's runner) and collects what each produced:
// the shared loop of the model-level engine tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/sched/engine.h"
#include "tests/sched/engine_harness.h"

namespace vks::test {

struct EngineOutcome {
  std::vector<std::vector<int32_t>> ids;  // per request
  std::vector<Usage> usage;
  EngineStats stats;
  int32_t most_running = 0;  // the most sequences seen running at once
};

// Submits the requests (each waiting for the one before when one_by_one) and polls until all
// finished or 50 s passed; an error event or an unfinished request fails the test. watch, where
// given, sees the engine's stats at every poll.
inline EngineOutcome run_to_completion(Engine& engine, const std::vector<GenerateRequest>& reqs, bool one_by_one,
                                       const std::function<void(const EngineStats&)>& watch = {}) {
  using namespace std::chrono_literals;
  EngineOutcome out;
  std::vector<std::string> ids;
  std::map<std::string, std::vector<int32_t>> tokens;
  std::map<std::string, Usage> usage;
  auto drain_until = [&](auto done) {
    const auto until = std::chrono::steady_clock::now() + 50s;
    while (!done() && std::chrono::steady_clock::now() < until) {
      const EngineStats stats = engine.stats();
      out.most_running = std::max(out.most_running, stats.running);
      if (watch) watch(stats);
      std::vector<EngineEvent> ev;
      engine.poll_events(ev);
      for (const EngineEvent& e : ev) {
        for (const GeneratedToken& t : e.tokens) tokens[e.request_id].push_back(t.id);
        if (e.type == EventType::kFinished) usage[e.request_id] = e.usage;
        if (e.type == EventType::kError) ADD_FAILURE() << e.error_message;
      }
      if (ev.empty()) std::this_thread::sleep_for(1ms);
    }
  };
  for (const GenerateRequest& r : reqs) {
    const SubmitResult s = engine.submit(r);
    EXPECT_TRUE(s.ok) << s.message;
    ids.push_back(s.id);
    if (one_by_one) drain_until([&] { return usage.count(s.id) != 0; });
  }
  drain_until([&] { return std::all_of(ids.begin(), ids.end(), [&](const auto& id) { return usage.count(id) != 0; }); });
  out.stats = engine.stats();
  for (const auto& id : ids) {
    EXPECT_TRUE(usage.count(id)) << "request " << id << " did not finish";
    out.ids.push_back(tokens[id]);
    out.usage.push_back(usage[id]);
  }
  return out;
}

// Six companions of a target request (greedy and sampled, on reversed prefixes of its prompt, 10
// to 25 tokens) with the target placed fourth (index kTargetInBatch).
inline constexpr size_t kTargetInBatch = 3;
inline std::vector<GenerateRequest> with_companions(const GenerateRequest& target) {
  std::vector<GenerateRequest> batch;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> prompt(target.prompt_ids.begin(), target.prompt_ids.begin() + 5 + 4 * i);
    std::reverse(prompt.begin() + 1, prompt.end());
    GenerateRequest r = greedy_request(prompt, 10 + 3 * i);
    if (i % 2 == 1) {
      r.sampling.temperature = 0.8f;
      r.sampling.seed = 100 + i;
    }
    batch.push_back(r);
    if (i == 2) batch.push_back(target);
  }
  return batch;
}

}  // namespace vks::test
