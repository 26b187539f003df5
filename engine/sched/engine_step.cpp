// One engine step in three parts, each reading and writing the engine's StepPlan:
//   schedule_step:    the scheduler's choice, its events (preempted, scheduled), what each chunk is
//                     for and the StepBatch;
//   run_step:         the runner, its failure (an exception stays here) and the result's shape;
//   postprocess_step: the scheduler's bookkeeping, late cancels, the draws (on the sampling pool),
//                     then each chunk in order: an embed input's rows pooled, a generate request's
//                     token emitted.
#include <algorithm>
#include <exception>

#include "engine/sched/constrained_draw.h"
#include "engine/sched/engine_impl.h"

namespace vks {

using sched::ChunkKind;
using sched::Clock;
using sched::PlannedChunk;
using sched::Request;
using sched::StepPlan;

namespace {
constexpr auto kThroughputWindow = std::chrono::seconds(5);
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

bool Engine::Impl::schedule_step(StepPlan& plan) {
  plan.out = scheduler.schedule(Clock::now());
  last_step_empty = plan.out.empty();
  if (plan.out.empty()) return false;
  const auto start = Clock::now();
  for (sched::Sequence* s : plan.out.preempted) {
    if (s->state == sched::SeqState::kFinished || embed_owner(s)) continue;
    events.add(request_event(*by_seq.at(s), EventType::kPreempted));
  }
  for (sched::Sequence* s : plan.out.admitted) {
    if (sched::EmbedJob* job = embed_owner(s)) {
      if (!job->scheduled_once) {
        job->scheduled_once = true;
        job->first_scheduled = start;
      }
      continue;
    }
    Request& r = *by_seq.at(s);
    if (!r.scheduled_once) {
      r.scheduled_once = true;
      r.first_scheduled = start;
    }
    events.add(request_event(r, EventType::kScheduled));
  }

  StepBatch& batch = plan.batch;
  batch.tokens.clear();
  plan.chunks.resize(plan.out.chunks.size());
  plan.n_full = plan.n_hidden = plan.n_verify = 0;
  batch.seqs.resize(plan.out.chunks.size());
  for (size_t i = 0; i < plan.out.chunks.size(); ++i) {
    const sched::ScheduledChunk& c = plan.out.chunks[i];
    PlannedChunk& pc = plan.chunks[i];
    pc = PlannedChunk{};
    pc.chunk = c;
    SeqChunk& sc = batch.seqs[i];
    sc.token_offset = static_cast<int32_t>(batch.tokens.size());
    sc.n_tokens = c.n_tokens;
    sc.n_past = c.n_past;
    sc.block_table = c.seq->kv.blocks;
    sc.logits = LogitsMode::kNone;
    sc.n_verify = 0;
    if (sched::EmbedJob* job = embed_owner(c.seq)) {
      pc.kind = ChunkKind::kEmbed;
      pc.embed = job;
      pc.hidden_row = plan.n_hidden;
      plan.n_hidden += c.n_tokens;
      sc.logits = LogitsMode::kHidden;
    } else {
      Request& r = *by_seq.at(c.seq);
      pc.request = &r;
      if (c.completes()) {
        pc.kind = ChunkKind::kGenerate;
        pc.suppressed = r.stop.suppressed_for(r.generated + 1, eog_ids);
        pc.full_logits = r.constraint != nullptr || r.sampler.needs_full_logits(!pc.suppressed.empty());
        if (pc.full_logits) pc.logits_row = plan.n_full++;
        sc.logits = pc.full_logits ? LogitsMode::kFull : LogitsMode::kArgmax;
      }
    }
    batch.tokens.insert(batch.tokens.end(), c.seq->tokens.begin() + c.n_past, c.seq->tokens.begin() + c.n_past + c.n_tokens);
  }
  batch.finalize(blocks.block_size());
  return true;
}

void Engine::Impl::run_step(StepPlan& plan) {
  plan.failure.clear();
  plan.failure_code = ErrorCode::kDevice;
  try {
    const auto runner_start = Clock::now();
    runner->step(plan.batch, plan.result);
    runner_ms_total += ms_between(runner_start, Clock::now());
    const StepResult& r = plan.result;
    if (r.argmax.size() != plan.batch.seqs.size() || r.logits.size() != size_t(plan.n_full) * limits.vocab_size ||
        r.hidden.size() != size_t(plan.n_hidden) * runner->config().dim || r.verify_argmax.size() != size_t(plan.n_verify)) {
      plan.failure = "runner returned a result of the wrong size";
      plan.failure_code = ErrorCode::kInternal;
    }
  } catch (const Error& e) {
    plan.failure = e.what();
    plan.failure_code = e.code();
  } catch (const std::exception& e) {
    plan.failure = e.what();
  }
}

void Engine::Impl::postprocess_step(StepPlan& plan) {
  const auto now = Clock::now();
  if (!plan.failure.empty()) {
    fail_step(plan, now);
    return;
  }
  scheduler.on_step_done(plan.out);
  const std::vector<std::string> late_cancels = take_late_cancels();
  std::unordered_set<const sched::Sequence*> cancelled;
  for (const std::string& id : late_cancels) {
    if (auto it = requests.find(id); it != requests.end()) cancelled.insert(&it->second->seq);
  }

  plan.draws.clear();
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    PlannedChunk& pc = plan.chunks[i];
    const sched::ScheduledChunk& c = pc.chunk;
    prompt_tokens_processed += std::max(0, std::min(c.n_past + c.n_tokens, c.seq->num_prompt_tokens) - c.n_past);
    if (pc.kind != ChunkKind::kGenerate) continue;
    pc.cancelled = cancelled.count(c.seq) != 0;
    if (!pc.cancelled) plan.draws.push_back(i);
  }
  // Sampling is independent per request (own RNG, own logits row), so it runs on the pool;
  // pooling, detokenizing, stop checks and events stay in chunk order on this thread.
  pool.parallel_for(plan.draws.size(), [&](size_t k) { draw(plan, plan.chunks[plan.draws[k]]); });

  int32_t decoded = 0;
  std::vector<sched::EmbedJob*> embeds_done;
  for (PlannedChunk& pc : plan.chunks) {
    if (pc.kind == ChunkKind::kEmbed) {
      pool_embed_chunk(pc, plan.result, embeds_done);
    } else if (pc.kind == ChunkKind::kGenerate && !pc.cancelled) {
      decoded += emit_draw(pc, now);
    }
  }
  for (sched::EmbedJob* job : embeds_done) finish_embed(*job, FinishReason::kStop, now);
  apply_cancels(late_cancels);
  tokens_generated += decoded;
  decode_window.emplace_back(now, decoded);
  while (!decode_window.empty() && now - decode_window.front().first > kThroughputWindow) decode_window.pop_front();
}

void Engine::Impl::fail_step(StepPlan& plan, Clock::time_point now) {
  const std::string message = "model step failed: " + plan.failure;
  for (const PlannedChunk& pc : plan.chunks) {
    const sched::Sequence* seq = pc.chunk.seq;
    if (auto it = embed_by_seq.find(seq); it != embed_by_seq.end()) {
      fail_embed(*it->second, plan.failure_code, message, now);  // forgets all its seqs
    } else if (auto r = by_seq.find(seq); r != by_seq.end() && seq->state != sched::SeqState::kFinished) {
      fail(*r->second, plan.failure_code, message, now);
    }
  }
}

std::vector<std::string> Engine::Impl::take_late_cancels() {
  // Cancels that arrived while the step ran take effect before its tokens are emitted (applied
  // after them by the caller, whose loop must not see a destroyed request).
  // A cancel for a request submitted during the step (still in the inbox, not admitted) stays in
  // cancel_inbox: the next turn admits that request first and then cancels it. Taking it here
  // would drop it, and the request would run to its end although its cancel was answered.
  std::vector<std::string> late;
  std::lock_guard lock(mu);
  std::vector<std::string> not_admitted;
  for (std::string& id : cancel_inbox) {
    const bool admitted = requests.count(id) != 0 || embed_jobs.count(id) != 0;
    (admitted ? late : not_admitted).push_back(std::move(id));
  }
  cancel_inbox.swap(not_admitted);
  return late;
}

void Engine::Impl::draw(const StepPlan& plan, PlannedChunk& pc) {
  Request& r = *pc.request;
  try {
    if (r.constraint) {
      // Grammar masking runs here, on the sampling pool, so it never delays other requests'
      // draws; the mask of a state seen before comes from the constraint's cache.
      const std::span<const float> logits(plan.result.logits.data() + size_t(pc.logits_row) * limits.vocab_size,
                                          limits.vocab_size);
      if (!sched::constrained_draw(*r.constraint, r.sampler, logits, r.seq.tokens, pc.suppressed, pc.token, pc.error)) {
        pc.error_code = ErrorCode::kInvalidArgument;
      }
    } else if (pc.full_logits) {
      const std::span<const float> logits(plan.result.logits.data() + size_t(pc.logits_row) * limits.vocab_size,
                                          limits.vocab_size);
      pc.token = r.sampler.sample(logits, r.seq.tokens, pc.suppressed);
    } else {
      pc.token = r.sampler.from_argmax(plan.result.argmax[static_cast<size_t>(&pc - plan.chunks.data())]);
    }
  } catch (const std::exception& e) {
    pc.error = e.what();
  }
}

int32_t Engine::Impl::emit_draw(PlannedChunk& pc, Clock::time_point now) {
  Request& r = *pc.request;
  if (!pc.error.empty()) {
    fail(r, pc.error_code, (pc.error_code == ErrorCode::kInternal ? "sampling failed: " : "") + pc.error, now);
    return 0;
  }
  if (pc.token.id < 0 || pc.token.id >= limits.vocab_size) {
    fail(r, ErrorCode::kInternal, "runner returned token id " + std::to_string(pc.token.id) + " outside the vocabulary", now);
    return 0;
  }
  emit_token(r, pc.token, now);
  return 1;
}

}  // namespace vks
