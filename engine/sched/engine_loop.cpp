// The scheduler thread: drains submissions and cancels, expires deadlines, then one step as
// schedule -> run -> postprocess (engine_step.cpp), and publishes events and stats. Nothing thrown
// here leaves the thread: a runner failure fails that step's requests and the engine keeps serving.
#include <algorithm>
#include <exception>

#include "engine/model/kv_pools.h"
#include "engine/sched/engine_impl.h"

namespace vks {

using sched::Clock;
using sched::ms_between;
using sched::Request;


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
        if (drafter->acceptance_carries_over()) req.draft_length.start_from(drafter_record);
        by_seq[&req.seq] = &req;
        requests[req.id] = std::move(r);
        scheduler.add(&req.seq, now);
        EngineEvent e = sched::request_event(req, EventType::kQueued);
        e.queue_position = scheduler.waiting_position(&req.seq, now);
        events.add(std::move(e));
      }
      apply_cancels(cancels);
      if (stop) break;
      expire_deadlines(Clock::now());
      if (schedule_step(step_plan)) {
        stepped = true;
        run_step(step_plan);
        postprocess_step(step_plan);
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

std::vector<KvPoolStats> Engine::Impl::kv_pool_stats() const {
  const LlamaConfig& c = runner->config();
  const int64_t bs = blocks.block_size();
  const auto window_bytes = static_cast<int64_t>(runner->kv_window_bytes_per_token());
  const auto stats_of = [&](const char* kind, const sched::BlockManager& b, int64_t layers, int64_t window, int64_t bytes_per_token) {
    return KvPoolStats{kind, static_cast<int32_t>(layers), static_cast<int32_t>(window), b.num_blocks(), b.num_used(),
                       b.num_cached(), bs * bytes_per_token};
  };
  std::vector<KvPoolStats> pools;
  if (!window_blocks) {
    pools.push_back(stats_of("full", blocks, static_cast<int64_t>(c.n_attention_layers()), 0,
                         static_cast<int64_t>(runner->kv_bytes_per_token())));
    return pools;
  }
  pools.push_back(stats_of("full", blocks, static_cast<int64_t>(n_full_pool_layers(c)), 0,
                       static_cast<int64_t>(runner->kv_bytes_per_token()) - window_bytes));
  pools.push_back(stats_of("window", *window_blocks, static_cast<int64_t>(n_window_pool_layers(c)), window_pool_window(c),
                       window_bytes));
  return pools;
}

void Engine::Impl::publish_stats() {
  EngineStats s;
  s.waiting = scheduler.num_waiting();
  s.running = scheduler.num_running();
  s.kv_blocks_total = blocks.num_blocks();
  s.kv_blocks_used = blocks.num_used();
  s.kv_bytes_per_token = static_cast<int64_t>(runner->kv_bytes_per_token());
  s.cpu_expert_layers = runner->cpu_expert_layers();
  s.kv_blocks_cached = blocks.num_cached();
  s.kv_pools = kv_pool_stats();
  // Each turn ends here, so the peaks see every turn's end (a reader polling stats may miss some).
  kv_pool_peaks.resize(s.kv_pools.size(), 0);
  for (size_t i = 0; i < s.kv_pools.size(); ++i) {
    kv_pool_peaks[i] = std::max(kv_pool_peaks[i], s.kv_pools[i].blocks_used);
    s.kv_pools[i].blocks_used_peak = kv_pool_peaks[i];
  }
  s.prefix_hit_tokens = blocks.hit_tokens();
  s.prefix_query_tokens = blocks.query_tokens();
  s.requests_finished = requests_finished;
  s.tokens_generated = tokens_generated;
  s.prompt_tokens_processed = prompt_tokens_processed;
  s.preemptions = scheduler.num_preemptions();
  s.steps = steps_run;
  s.step_ms_total = step_ms_total;
  s.runner_ms_total = runner_ms_total;
  s.draft_tokens = draft_tokens;
  s.accepted_tokens = accepted_tokens;
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
