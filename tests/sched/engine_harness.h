#pragma once
// Runs an Engine over a FakeRunner and collects each request's event stream.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "engine/sched/engine.h"
#include "tests/sched/fakes.h"

namespace vks::test {

struct Stream {
  std::vector<EngineEvent> events;
  std::vector<int32_t> ids;
  std::string text;
  bool finished = false;
  EngineEvent final_event;
  std::vector<EventType> types() const {
    std::vector<EventType> t;
    for (const EngineEvent& e : events) t.push_back(e.type);
    return t;
  }
};

class Harness {
 public:
  explicit Harness(EngineConfig cfg = {}, FakeRunnerOptions ro = {}, LogitsFn fn = hashed_logits,
                   FakeTokenizer tok = FakeTokenizer::letters())
      : tok_(std::move(tok)) {
    auto runner = std::make_unique<FakeRunner>(ro, fn);
    runner_ = runner->shared();
    engine_ = std::make_unique<Engine>(std::move(runner), tok_, cfg);
    engine_->set_event_notifier([this] {
      std::lock_guard lock(mu_);
      ++notified_;
      cv_.notify_all();
    });
  }

  Engine& engine() { return *engine_; }
  FakeRunner::Shared& runner() { return *runner_; }
  const FakeTokenizer& tokenizer() const { return tok_; }

  std::string submit_ok(GenerateRequest r) {
    SubmitResult s = engine_->submit(std::move(r));
    EXPECT_TRUE(s.ok) << s.message;
    return s.id;
  }

  void drain() {
    std::vector<EngineEvent> ev;
    engine_->poll_events(ev);
    for (EngineEvent& e : ev) {
      Stream& s = streams_[e.request_id];
      EXPECT_FALSE(s.finished) << "event after kFinished for " << e.request_id;
      for (const GeneratedToken& t : e.tokens) s.ids.push_back(t.id);
      s.text += e.text;
      if (e.type == EventType::kFinished) {
        s.finished = true;
        s.final_event = e;
      }
      s.events.push_back(std::move(e));
    }
  }

  // Waits until every id finished (false on timeout).
  bool wait(const std::vector<std::string>& ids, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (true) {
      drain();
      bool all = true;
      for (const std::string& id : ids) all = all && streams_[id].finished;
      if (all) return true;
      std::unique_lock lock(mu_);
      if (cv_.wait_until(lock, std::min(until, std::chrono::steady_clock::now() + std::chrono::milliseconds(20))) ==
              std::cv_status::timeout &&
          std::chrono::steady_clock::now() >= until) {
        return false;
      }
    }
  }
  // Waits until a request has produced at least n tokens.
  bool wait_tokens(const std::string& id, size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      drain();
      if (streams_[id].ids.size() >= n) return true;
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(5));
    }
    return false;
  }

  Stream& stream(const std::string& id) { return streams_[id]; }

 private:
  FakeTokenizer tok_;  // outlives the engine
  std::shared_ptr<FakeRunner::Shared> runner_;
  std::unique_ptr<Engine> engine_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t notified_ = 0;
  std::map<std::string, Stream> streams_;
};

inline GenerateRequest greedy_request(std::vector<int32_t> prompt, int32_t max_tokens, bool ignore_eos = true) {
  GenerateRequest r;
  r.prompt_ids = std::move(prompt);
  r.sampling.temperature = 0;
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = ignore_eos;
  return r;
}

}  // namespace vks::test
