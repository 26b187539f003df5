// A generate request's stream: its prefill progress, each emitted token (stop checks, latency
// samples), its error and its end (usage, timings), which frees its sequence.
#include <algorithm>

#include "engine/sched/engine_impl.h"

namespace vks {

using sched::Clock;
using sched::ms_between;
using sched::Request;
using sched::request_event;

namespace {
constexpr size_t kLatencySamples = 1000;
}  // namespace

void Engine::Impl::report_prefill(Request& r, const sched::ScheduledChunk& c, Clock::time_point now) {
  // Only while the prompt is read: once a token went out the stream is not silent, and the
  // recompute after a preemption re-reads tokens the client has seen progress for already.
  if (config.progress_interval_ms < 0 || r.generated > 0) return;
  const int32_t total = r.seq.num_prompt_tokens;
  const int32_t done = std::min(c.n_past + c.n_tokens - c.n_draft, total);
  if (done <= r.prompt_reported) return;  // counts only grow, also across a preemption
  if (c.completes()) {
    if (r.prompt_reported == 0) return;  // read in one go (or quickly): its first token says enough
  } else if (ms_between(r.last_progress, now) < config.progress_interval_ms) {
    return;
  }
  EngineEvent e = request_event(r, EventType::kProgress);
  e.prompt_tokens_done = done;
  e.usage.prompt_tokens = total;
  e.usage.cached_tokens = r.seq.num_cached_prompt;
  events.add(std::move(e));
  r.prompt_reported = done;
  r.last_progress = now;
}

void Engine::Impl::emit_token(Request& r, const GeneratedToken& tok, Clock::time_point now) {
  r.seq.tokens.push_back(tok.id);
  ++r.generated;
  r.draft_length.on_emitted(tok.id);
  const sched::StopOutcome stop = r.stop.on_token(tok.id, r.generated);
  const bool first = r.generated == 1;
  EngineEvent e = request_event(r, first ? EventType::kFirstToken : EventType::kToken);
  if (r.params.logprobs < 0) {
    GeneratedToken bare;
    bare.id = tok.id;
    e.tokens.push_back(bare);
  } else {
    e.tokens.push_back(tok);
  }
  e.text = stop.text;
  events.add(std::move(e));
  if (first) {
    r.first_token = now;
    ttft_samples.push_back(ms_between(r.submitted, now));
    if (ttft_samples.size() > kLatencySamples) ttft_samples.pop_front();
  } else {
    itl_samples.push_back(ms_between(r.last_token, now));
    if (itl_samples.size() > kLatencySamples) itl_samples.pop_front();
  }
  r.last_token = now;
  if (stop.finish) finish(r, *stop.finish, now);
}

void Engine::Impl::fail(Request& r, ErrorCode code, const std::string& message, Clock::time_point now) {
  EngineEvent e = request_event(r, EventType::kError);
  e.error_code = code;
  e.error_message = message;
  events.add(std::move(e));
  finish(r, FinishReason::kError, now);
}

void Engine::Impl::finish(Request& r, FinishReason reason, Clock::time_point now) {
  if (reason == FinishReason::kCancelled || reason == FinishReason::kDeadline) {
    std::string rest = r.stop.drain();  // text held back for a possible stop string
    if (!rest.empty()) {
      EngineEvent t = request_event(r, r.generated == 0 ? EventType::kFirstToken : EventType::kToken);
      t.text = std::move(rest);
      events.add(std::move(t));
    }
  }
  EngineEvent e = request_event(r, EventType::kFinished);
  e.reason = reason;
  e.usage.prompt_tokens = r.seq.num_prompt_tokens;
  e.usage.cached_tokens = r.seq.num_cached_prompt;
  e.usage.generated_tokens = r.generated;
  e.timings.queue_ms = r.scheduled_once ? ms_between(r.submitted, r.first_scheduled) : ms_between(r.submitted, now);
  e.timings.ttft_ms = r.generated > 0 ? ms_between(r.submitted, r.first_token) : 0;
  e.timings.total_ms = ms_between(r.submitted, now);
  e.timings.draft_tokens = static_cast<int32_t>(r.draft_length.drafted());
  e.timings.accepted_tokens = static_cast<int32_t>(r.draft_length.accepted());
  avg_request_ms = 0.9 * avg_request_ms + 0.1 * e.timings.total_ms;
  if (drafter->acceptance_carries_over()) drafter_record.merge(r.draft_length);
  events.add(std::move(e));

  ++requests_finished;
  scheduler.remove(&r.seq);
  const std::string id = r.id;
  {
    std::lock_guard lock(mu);
    live_ids.erase(id);
  }
  by_seq.erase(&r.seq);
  requests.erase(id);  // destroys r
}

}  // namespace vks
