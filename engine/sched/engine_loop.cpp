// The scheduler thread: drains submissions and cancels, expires deadlines, schedules a step, runs it
// on the model runner, samples, checks stop conditions and publishes events. Nothing thrown here
// leaves the thread: a runner failure fails that step's requests and the engine keeps serving.
#include <algorithm>
#include <exception>

#include "engine/sched/constrained_draw.h"
#include "engine/sched/engine_impl.h"

namespace vks {

using sched::Clock;
using sched::Request;

namespace {
constexpr size_t kLatencySamples = 1000;
constexpr auto kThroughputWindow = std::chrono::seconds(5);
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
EngineEvent event_for(const Request& r, EventType type) {
  EngineEvent e;
  e.request_id = r.id;
  e.type = type;
  return e;
}
}  // namespace

void Engine::Impl::run() {
  bool stop = false;
  while (!stop) {
    Clock::time_point turn_start;  // set once the inbox is drained (take_inbox may wait)
    bool stepped = false;
    std::vector<std::unique_ptr<Request>> fresh;
    std::vector<std::string> cancels;
    std::vector<std::unique_ptr<sched::EmbedJob>> fresh_embeds;
    try {
      take_inbox(fresh, cancels, stop, fresh_embeds);
      turn_start = Clock::now();
      const auto now = turn_start;
      for (auto& job : fresh_embeds) add_embed_job(std::move(job), now);
      for (auto& r : fresh) {
        Request& req = *r;
        by_seq[&req.seq] = &req;
        requests[req.id] = std::move(r);
        scheduler.add(&req.seq, now);
        EngineEvent e = event_for(req, EventType::kQueued);
        e.queue_position = scheduler.waiting_position(&req.seq, now);
        events.add(std::move(e));
      }
      apply_cancels(cancels);
      if (stop) break;
      expire_deadlines(Clock::now());
      const sched::SchedulerOutput out = scheduler.schedule(Clock::now());
      last_step_empty = out.empty();
      if (!out.empty()) {
        stepped = true;
        run_step(out);
      }
    } catch (const std::exception& e) {
      end_all(FinishReason::kError, std::string("engine error: ") + e.what());
    } catch (...) {
      end_all(FinishReason::kError, "engine error: unknown exception");
    }
    if (stepped) {
      ++steps_run;
      step_ms_total += ms_between(turn_start, Clock::now());
    }
    try {
      publish_stats();
    } catch (...) {  // stats are best effort
    }
    events.publish();
  }
  end_all(FinishReason::kCancelled, {});  // shutdown: everything still live ends as cancelled
  try {
    publish_stats();
  } catch (...) {
  }
  events.publish();
}

void Engine::Impl::end_all(FinishReason reason, const std::string& message) {
  // A bug, not a device failure (or shutdown): end everything in flight, oldest first, rather than
  // let the thread die. Never throws.
  std::vector<Request*> all;
  for (auto& [id, r] : requests) all.push_back(r.get());
  std::sort(all.begin(), all.end(), [](const Request* a, const Request* b) { return a->seq.arrival < b->seq.arrival; });
  std::vector<sched::EmbedJob*> embeds;
  for (auto& [id, job] : embed_jobs) embeds.push_back(job.get());
  for (sched::EmbedJob* job : embeds) {
    const std::string id = job->id;
    try {
      if (reason == FinishReason::kError) {
        fail_embed(*job, ErrorCode::kInternal, message, Clock::now());
      } else {
        finish_embed(*job, reason, Clock::now());
      }
    } catch (...) {
      EngineEvent e;
      e.request_id = id;
      e.type = EventType::kFinished;
      e.reason = FinishReason::kError;
      events.add(std::move(e));
      if (auto it = embed_jobs.find(id); it != embed_jobs.end()) {
        for (auto& in : it->second->inputs) embed_by_seq.erase(&in->seq);
        embed_jobs.erase(it);
      }
      std::lock_guard lock(mu);
      live_ids.erase(id);
    }
  }
  for (Request* r : all) {
    const std::string id = r->id;
    const sched::Sequence* seq = &r->seq;
    try {
      if (reason == FinishReason::kError) {
        fail(*r, ErrorCode::kInternal, message, Clock::now());
      } else {
        finish(*r, reason, Clock::now());
      }
    } catch (...) {
      // Its state is inconsistent: drop it, but still end its stream.
      EngineEvent e;
      e.request_id = id;
      e.type = EventType::kFinished;
      e.reason = FinishReason::kError;
      events.add(std::move(e));
      by_seq.erase(seq);
      requests.erase(id);
      std::lock_guard lock(mu);
      live_ids.erase(id);
    }
  }
}

void Engine::Impl::take_inbox(std::vector<std::unique_ptr<Request>>& fresh, std::vector<std::string>& cancels, bool& stop,
                              std::vector<std::unique_ptr<sched::EmbedJob>>& fresh_embeds) {
  std::unique_lock lock(mu);
  const bool busy = scheduler.num_running() > 0 || scheduler.num_waiting() > 0;
  auto ready = [&] { return stopping || !inbox.empty() || !cancel_inbox.empty() || !embed_inbox.empty(); };
  if (!busy) {
    const auto deadline = next_deadline();
    if (deadline == Clock::time_point::max()) {
      wake.wait(lock, ready);
    } else {
      wake.wait_until(lock, deadline, ready);
    }
  } else if (last_step_empty) {
    // Work exists but nothing could be scheduled (not expected: with nothing running every block is
    // free); do not spin.
    wake.wait_for(lock, std::chrono::milliseconds(1), ready);
  }
  fresh.swap(inbox);
  cancels.swap(cancel_inbox);
  fresh_embeds.swap(embed_inbox);
  stop = stopping;
  waiting_snapshot = waiting_admissions() + static_cast<int32_t>(fresh.size()) + embed_inbox_jobs;
  embed_inbox_jobs = 0;
}

Clock::time_point Engine::Impl::next_deadline() const {
  auto t = Clock::time_point::max();
  for (const auto& [id, r] : requests) {
    if (r->params.deadline) t = std::min(t, *r->params.deadline);
  }
  for (const auto& [id, job] : embed_jobs) {
    if (job->deadline) t = std::min(t, *job->deadline);
  }
  return t;
}

int32_t Engine::Impl::waiting_admissions() const {
  int32_t n = scheduler.num_waiting();
  for (const auto& [id, job] : embed_jobs) {
    int32_t waiting_inputs = 0;
    for (const auto& in : job->inputs) waiting_inputs += in->seq.state == sched::SeqState::kWaiting && !in->done ? 1 : 0;
    if (waiting_inputs > 1) n -= waiting_inputs - 1;
  }
  return n;
}

void Engine::Impl::apply_cancels(const std::vector<std::string>& cancels) {
  for (const std::string& id : cancels) {
    auto it = requests.find(id);
    if (it != requests.end()) {
      finish(*it->second, FinishReason::kCancelled, Clock::now());
    } else if (auto job = embed_jobs.find(id); job != embed_jobs.end()) {
      finish_embed(*job->second, FinishReason::kCancelled, Clock::now());
    }
  }
}

void Engine::Impl::expire_deadlines(Clock::time_point now) {
  std::vector<Request*> late;
  for (auto& [id, r] : requests) {
    if (r->params.deadline && *r->params.deadline <= now) late.push_back(r.get());
  }
  for (Request* r : late) finish(*r, FinishReason::kDeadline, now);
  std::vector<sched::EmbedJob*> late_embeds;
  for (auto& [id, job] : embed_jobs) {
    if (job->deadline && *job->deadline <= now) late_embeds.push_back(job.get());
  }
  for (sched::EmbedJob* job : late_embeds) finish_embed(*job, FinishReason::kDeadline, now);
}

void Engine::Impl::run_step(const sched::SchedulerOutput& out) {
  const auto start = Clock::now();
  auto owner = [this](const sched::Sequence* s) { return by_seq.at(s); };
  for (sched::Sequence* s : out.preempted) {
    if (s->state == sched::SeqState::kFinished || embed_owner(s)) continue;
    events.add(event_for(*owner(s), EventType::kPreempted));
  }
  for (sched::Sequence* s : out.admitted) {
    if (sched::EmbedJob* job = embed_owner(s)) {
      if (!job->scheduled_once) {
        job->scheduled_once = true;
        job->first_scheduled = start;
      }
      continue;
    }
    Request& r = *owner(s);
    if (!r.scheduled_once) {
      r.scheduled_once = true;
      r.first_scheduled = start;
    }
    events.add(event_for(r, EventType::kScheduled));
  }

  StepBatch batch;
  size_t n_hidden = 0;  // tokens whose hidden state an embed request pools
  std::vector<bool> full(out.chunks.size(), false);
  // Tokens banned for the next draw (EOS/stops before min_tokens); computed once, used twice.
  std::vector<std::vector<int32_t>> suppressed(out.chunks.size());
  for (size_t i = 0; i < out.chunks.size(); ++i) {
    const sched::ScheduledChunk& c = out.chunks[i];
    SeqChunk sc;
    sc.token_offset = static_cast<int32_t>(batch.tokens.size());
    sc.n_tokens = c.n_tokens;
    sc.n_past = c.n_past;
    sc.block_table = c.seq->kv.blocks;
    if (embed_owner(c.seq)) {
      sc.logits = LogitsMode::kHidden;
      n_hidden += static_cast<size_t>(c.n_tokens);
    } else if (c.completes()) {
      Request& r = *owner(c.seq);
      suppressed[i] = r.stop.suppressed_for(r.generated + 1, eog_ids);
      full[i] = r.constraint != nullptr || r.sampler.needs_full_logits(!suppressed[i].empty());
      sc.logits = full[i] ? LogitsMode::kFull : LogitsMode::kArgmax;
    }
    batch.tokens.insert(batch.tokens.end(), c.seq->tokens.begin() + c.n_past, c.seq->tokens.begin() + c.n_past + c.n_tokens);
    batch.seqs.push_back(std::move(sc));
  }
  batch.finalize(blocks.block_size());

  StepResult result;
  std::string failure;
  ErrorCode failure_code = ErrorCode::kDevice;
  try {
    const auto runner_start = Clock::now();
    runner->step(batch, result);
    runner_ms_total += ms_between(runner_start, Clock::now());
    const size_t n_full = static_cast<size_t>(std::count(full.begin(), full.end(), true));
    if (result.argmax.size() != batch.seqs.size() || result.logits.size() != n_full * limits.vocab_size ||
        result.hidden.size() != n_hidden * runner->config().dim) {
      failure = "runner returned a result of the wrong size";
      failure_code = ErrorCode::kInternal;
    }
  } catch (const Error& e) {
    failure = e.what();
    failure_code = e.code();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const auto now = Clock::now();
  if (!failure.empty()) {
    for (const sched::ScheduledChunk& c : out.chunks) {
      if (auto it = embed_by_seq.find(c.seq); it != embed_by_seq.end()) {
        fail_embed(*it->second, failure_code, "model step failed: " + failure, now);  // forgets all its seqs
        continue;
      }
      if (by_seq.count(c.seq) && c.seq->state != sched::SeqState::kFinished) {
        fail(*owner(c.seq), failure_code, "model step failed: " + failure, now);
      }
    }
    return;
  }
  scheduler.on_step_done(out);
  // Cancels that arrived while the step ran take effect before its tokens are emitted (applied
  // after the loop below, which must not see a destroyed request).
  // A cancel for a request submitted during the step (still in the inbox, not admitted) stays in
  // cancel_inbox: the next turn admits that request first and then cancels it. Taking it here
  // would drop it, and the request would run to its end although its cancel was answered.
  std::vector<std::string> late_cancels;
  {
    std::lock_guard lock(mu);
    std::vector<std::string> not_admitted;
    for (std::string& id : cancel_inbox) {
      const bool admitted = requests.count(id) != 0 || embed_jobs.count(id) != 0;
      (admitted ? late_cancels : not_admitted).push_back(std::move(id));
    }
    cancel_inbox.swap(not_admitted);
  }
  std::unordered_set<const sched::Sequence*> cancelled;
  for (const std::string& id : late_cancels) {
    if (auto it = requests.find(id); it != requests.end()) cancelled.insert(&it->second->seq);
  }

  // Sampling is independent per request (own RNG, own logits row), so it may run on the pool;
  // detokenizing, stop checks and events stay in chunk order on this thread.
  struct Draw {
    size_t chunk = 0;
    size_t row = 0;
    Request* request = nullptr;
    GeneratedToken token;
    std::string error;
    ErrorCode error_code = ErrorCode::kInternal;
  };
  std::vector<Draw> draws;
  size_t row = 0;
  for (size_t i = 0; i < out.chunks.size(); ++i) {
    const sched::ScheduledChunk& c = out.chunks[i];
    prompt_tokens_processed += std::max(0, std::min(c.n_past + c.n_tokens, c.seq->num_prompt_tokens) - c.n_past);
    if (!c.completes() || embed_owner(c.seq)) continue;
    const size_t my_row = full[i] ? row++ : 0;
    if (cancelled.count(c.seq)) continue;
    draws.push_back(Draw{i, my_row, owner(c.seq), {}, {}});
  }
  pool.parallel_for(draws.size(), [&](size_t k) {
    Draw& d = draws[k];
    Request& r = *d.request;
    try {
      if (r.constraint) {
        // Grammar masking runs here, on the sampling pool, so it never delays other requests'
        // draws; the mask of a state seen before comes from the constraint's cache.
        const std::span<const float> logits(result.logits.data() + d.row * limits.vocab_size, limits.vocab_size);
        if (!sched::constrained_draw(*r.constraint, r.sampler, logits, r.seq.tokens, suppressed[d.chunk], d.token, d.error)) {
          d.error_code = ErrorCode::kInvalidArgument;
        }
      } else if (full[d.chunk]) {
        const std::span<const float> logits(result.logits.data() + d.row * limits.vocab_size, limits.vocab_size);
        d.token = r.sampler.sample(logits, r.seq.tokens, suppressed[d.chunk]);
      } else {
        d.token = r.sampler.from_argmax(result.argmax[d.chunk]);
      }
    } catch (const std::exception& e) {
      d.error = e.what();
    }
  });
  if (n_hidden > 0) embed_step_done(out, result, now);
  int32_t decoded = 0;
  for (Draw& d : draws) {
    Request& r = *d.request;
    if (!d.error.empty()) {
      fail(r, d.error_code, (d.error_code == ErrorCode::kInternal ? "sampling failed: " : "") + d.error, now);
    } else if (d.token.id < 0 || d.token.id >= limits.vocab_size) {
      fail(r, ErrorCode::kInternal, "runner returned token id " + std::to_string(d.token.id) + " outside the vocabulary", now);
    } else {
      ++decoded;
      emit_token(r, d.token, now);
    }
  }
  apply_cancels(late_cancels);
  tokens_generated += decoded;
  decode_window.emplace_back(now, decoded);
  while (!decode_window.empty() && now - decode_window.front().first > kThroughputWindow) decode_window.pop_front();
}

void Engine::Impl::emit_token(Request& r, const GeneratedToken& tok, Clock::time_point now) {
  r.seq.tokens.push_back(tok.id);
  ++r.generated;
  const sched::StopOutcome stop = r.stop.on_token(tok.id, r.generated);
  const bool first = r.generated == 1;
  EngineEvent e = event_for(r, first ? EventType::kFirstToken : EventType::kToken);
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
  EngineEvent e = event_for(r, EventType::kError);
  e.error_code = code;
  e.error_message = message;
  events.add(std::move(e));
  finish(r, FinishReason::kError, now);
}

void Engine::Impl::finish(Request& r, FinishReason reason, Clock::time_point now) {
  if (reason == FinishReason::kCancelled || reason == FinishReason::kDeadline) {
    std::string rest = r.stop.drain();  // text held back for a possible stop string
    if (!rest.empty()) {
      EngineEvent t = event_for(r, r.generated == 0 ? EventType::kFirstToken : EventType::kToken);
      t.text = std::move(rest);
      events.add(std::move(t));
    }
  }
  EngineEvent e = event_for(r, EventType::kFinished);
  e.reason = reason;
  e.usage.prompt_tokens = r.seq.num_prompt_tokens;
  e.usage.cached_tokens = r.seq.num_cached_prompt;
  e.usage.generated_tokens = r.generated;
  e.timings.queue_ms = r.scheduled_once ? ms_between(r.submitted, r.first_scheduled) : ms_between(r.submitted, now);
  e.timings.ttft_ms = r.generated > 0 ? ms_between(r.submitted, r.first_token) : 0;
  e.timings.total_ms = ms_between(r.submitted, now);
  avg_request_ms = 0.9 * avg_request_ms + 0.1 * e.timings.total_ms;
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

void Engine::Impl::publish_stats() {
  EngineStats s;
  s.waiting = scheduler.num_waiting();
  s.running = scheduler.num_running();
  s.kv_blocks_total = blocks.num_blocks();
  s.kv_blocks_used = blocks.num_used();
  s.kv_blocks_cached = blocks.num_cached();
  s.prefix_hit_tokens = blocks.hit_tokens();
  s.prefix_query_tokens = blocks.query_tokens();
  s.requests_finished = requests_finished;
  s.tokens_generated = tokens_generated;
  s.prompt_tokens_processed = prompt_tokens_processed;
  s.preemptions = scheduler.num_preemptions();
  s.steps = steps_run;
  s.step_ms_total = step_ms_total;
  s.runner_ms_total = runner_ms_total;
  if (decode_window.size() >= 2) {
    int64_t n = 0;
    for (size_t i = 1; i < decode_window.size(); ++i) n += decode_window[i].second;
    const double secs = std::chrono::duration<double>(decode_window.back().first - decode_window.front().first).count();
    s.decode_tokens_per_s = secs > 0 ? static_cast<double>(n) / secs : 0;
  }
  s.ttft_ms_samples.assign(ttft_samples.begin(), ttft_samples.end());
  s.itl_ms_samples.assign(itl_samples.begin(), itl_samples.end());
  {
    std::lock_guard lock(stats_mu);
    stats_snapshot = std::move(s);
  }
  const int32_t waiting = waiting_admissions();
  std::lock_guard lock(mu);
  waiting_snapshot = waiting;
  const double per_slot = avg_request_ms / std::max(1, config.max_seqs);
  retry_after_ms = static_cast<int32_t>(std::clamp(per_slot * std::max(1, scheduler.num_waiting()), 50.0, 30000.0));
}

}  // namespace vks
