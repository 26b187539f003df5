// One engine step in three parts, each reading and writing the engine's StepPlan:
//   schedule_step:    drafts (speculative decoding), the scheduler's choice, its events (preempted,
//                     scheduled), what each chunk is for and the StepBatch;
//   run_step:         the runner, its failure (an exception stays here) and the result's shape;
//   postprocess_step: the scheduler's bookkeeping, late cancels, the draws (on the sampling pool),
//                     then each chunk in order: an embed input's rows pooled, a generate request's
//                     token emitted (after a draft: the accepted draft tokens and the target's next,
//                     then the sequence keeps only their K/V).
#include <algorithm>
#include <exception>

#include "engine/sched/draft_grammar.h"
#include "engine/sched/engine_impl.h"
#include "engine/sched/row_draws.h"

namespace vks {

using sched::ChunkKind;
using sched::Clock;
using sched::ms_between;
using sched::PlannedChunk;
using sched::Request;
using sched::StepPlan;

namespace {
constexpr auto kThroughputWindow = std::chrono::seconds(5);
// Tokens fed to the drafter for one sequence from which a call is a catch-up (a prompt), not a step's.
constexpr int64_t kLongFeed = 32;
}  // namespace

void Engine::Impl::propose_drafts() {
  // No step verifies a draft (a recurrent model, or no rows to spare beyond max_seqs): drafting
  // would only cost time (a draft model's steps) for drafts the scheduler drops.
  if (scheduler.config().max_draft_tokens == 0) return;
  // The step as it stands before drafts: each decoding request one token, emitting one.
  int32_t step_tokens = 0;
  for (sched::Sequence* s : scheduler.running()) step_tokens += s->is_decoding() && by_seq.count(s) ? 1 : 0;
  const double plain_ms = step_cost.estimate(step_tokens);
  // The drafter's time per draft token (a draft model's step; prompt lookup's is next to nothing),
  // known once it has drafted a few times (one sample may be a cold start or a stretched step, and an
  // estimate too high would keep drafting off for long): from then on each request's draft length
  // is chosen before drafting.
  const double draft_ms = config.speculative_cost_model && draft_cost.samples(1) >= sched::StepCost::kSamples
                              ? draft_cost.estimate(1)
                              : 0;
  int32_t planned_tokens = step_tokens, draft_steps = 0;
  double planned_emitted = step_tokens;
  draft_jobs.clear();
  for (sched::Sequence* s : scheduler.running()) {
    s->draft.clear();
    auto it = by_seq.find(s);
    if (it == by_seq.end() || !s->is_decoding()) continue;  // embed inputs, prefills
    Request& r = *it->second;
    // Verified rows are drawn with no min_tokens suppression (row_draws.h), so drafting waits until
    // EOS/stop ids are allowed at the next position and hence at every later one.
    if (!r.draft_length.enabled() || r.generated + 1 <= r.params.stop.min_tokens) continue;
    // Drafts past max_tokens would be verified for nothing: the step emits at most k+1 tokens.
    const int32_t most = std::min(r.draft_length.max(), r.params.stop.max_tokens - r.generated - 1);
    if (most <= 0) continue;
    int32_t want = most;
    if (draft_ms > 0) {
      want = sched::choose_draft(step_cost, r.draft_length, planned_tokens, planned_emitted, most, draft_ms, draft_steps);
      planned_tokens += want;
      planned_emitted += r.draft_length.expected_extra(want);
      if (want == 0) {
        // Not worth drafting for: a shadow draft now and then keeps its acceptance measured.
        if (r.draft_length.has_shadow() ||
            !r.draft_length.probe_due(most * draft_ms + drafter->unfed_tokens(*s) * feed_ms_per_token, plain_ms)) {
          continue;
        }
        want = most;
      }
    }
    draft_steps = std::max(draft_steps, want);
    const bool within_grammar = r.constraint && drafter->follows_grammar();
    draft_jobs.push_back({s, want, within_grammar ? &sched::reset_probe(*r.constraint, r.draft_grammar) : nullptr});
  }
  if (draft_jobs.empty()) return;
  const auto start = Clock::now();
  drafter->draft(draft_jobs);
  size_t longest = 0;
  for (const sched::DraftJob& job : draft_jobs) longest = std::max(longest, job.seq->draft.size());
  // A call that fed a long catch-up prices feeding, not drafting: its time per draft token would
  // make drafts look dear for good.
  const sched::FeedCost feed = drafter->last_feed();
  if (feed.most_for_one >= kLongFeed) {
    const double per_token = feed.ms / static_cast<double>(feed.tokens);
    feed_ms_per_token = feed_ms_per_token > 0 ? 0.5 * (feed_ms_per_token + per_token) : per_token;
  } else if (longest > 0) {
    draft_cost.record(1, ms_between(start, Clock::now()) / static_cast<double>(longest));
  }
  // Which drafts to verify: the drafting is paid for now, only the verification's cost counts.
  double step_emitted = step_tokens;
  for (const sched::DraftJob& job : draft_jobs) {
    sched::Sequence* s = job.seq;
    Request& r = *by_seq.at(s);
    if (r.constraint && job.grammar == nullptr) sched::cut_draft_to_grammar(*r.constraint, r.draft_grammar, s->draft);
    const auto available = static_cast<int32_t>(s->draft.size());
    const int32_t k = config.speculative_cost_model
                          ? sched::choose_draft(step_cost, r.draft_length, step_tokens, step_emitted, available)
                          : available;
    // Not verified: still measured against what the request emits next (acceptance for free).
    if (k == 0) r.draft_length.set_shadow(s->draft);
    s->draft.resize(static_cast<size_t>(k));
    step_tokens += k;
    step_emitted += r.draft_length.expected_extra(k);
  }
}

bool Engine::Impl::schedule_step(StepPlan& plan) {
  propose_drafts();
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
      r.last_progress = start;  // the first progress event is due an interval into the prefill
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
    pc.reset(c);
    SeqChunk& sc = batch.seqs[i];
    sc.token_offset = static_cast<int32_t>(batch.tokens.size());
    sc.n_tokens = c.n_tokens;
    sc.n_past = c.n_past;
    sc.block_table = c.seq->kv.blocks;
    sc.window_block_table = c.seq->window_kv.blocks;  // empty without a window pool
    std::replace(sc.window_block_table.begin(), sc.window_block_table.end(), sched::kNoBlock, 0);  // never read
    sc.state_slot = c.seq->state_slot;
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
        sc.logits = pc.full_logits ? LogitsMode::kFull : LogitsMode::kArgmax;
        sc.n_verify = c.n_draft;  // the draft's rows, before the last token's
        pc.verify_row = plan.n_verify;
        plan.n_verify += c.n_draft;
        if (pc.full_logits) {
          pc.logits_row = plan.n_full;
          plan.n_full += 1 + c.n_draft;
        }
      }
    }
    const auto first = c.seq->tokens.begin() + c.n_past;
    batch.tokens.insert(batch.tokens.end(), first, first + (c.n_tokens - c.n_draft));
    batch.tokens.insert(batch.tokens.end(), c.seq->draft.begin(), c.seq->draft.begin() + c.n_draft);
  }
  batch.finalize(blocks.block_size());
  return true;
}

void Engine::Impl::run_step(StepPlan& plan) {
  plan.failure.clear();
  plan.failure_code = ErrorCode::kDevice;
  try {
    const auto runner_start = Clock::now();
    for (const sched::StateCopy& c : plan.out.state_copies) runner->copy_recurrent_state(c.from, c.to);
    runner->step(plan.batch, plan.result);
    const double ms = ms_between(runner_start, Clock::now());
    runner_ms_total += ms;
    // Decode steps (one token per chunk, plus its draft) teach the speculation's cost model;
    // prefill and embed chunks would make the cost of a width depend on what else was batched.
    bool decode_only = true;
    for (const PlannedChunk& pc : plan.chunks) {
      decode_only &= pc.kind == ChunkKind::kGenerate && pc.chunk.n_tokens - pc.chunk.n_draft == 1;
    }
    if (decode_only) step_cost.record(static_cast<int32_t>(plan.batch.tokens.size()), ms);
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
    if (pc.request == nullptr) continue;  // an embed input
    pc.cancelled = cancelled.count(c.seq) != 0;
    if (pc.cancelled) continue;
    report_prefill(*pc.request, c, now);  // before the first token it may precede
    if (pc.kind == ChunkKind::kGenerate) plan.draws.push_back(i);
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
  const int32_t k = pc.chunk.n_draft;
  const std::span<const int32_t> draft(r.seq.draft.data(), static_cast<size_t>(k));  // as scheduled
  try {
    if (pc.full_logits) {
      // Grammar masking runs here, on the sampling pool, so it never delays other requests'
      // draws; the mask of a state seen before comes from the constraint's cache.
      sched::RowDrawInput in;
      in.rows = std::span<const float>(plan.result.logits.data() + size_t(pc.logits_row) * limits.vocab_size,
                                       size_t(1 + k) * limits.vocab_size);
      in.vocab = limits.vocab_size;
      in.history = r.seq.tokens;
      in.draft = draft;
      in.suppressed = pc.suppressed;
      if (!sched::draw_rows(in, r.sampler, r.constraint.get(), r.draft_history, pc.tokens, pc.error)) {
        pc.error_code = ErrorCode::kInvalidArgument;
      }
      return;
    }
    // Greedy from the device argmax: target(i), the token after draft[0, i), is verify_argmax's
    // entry i and, after the whole draft, the last row's argmax. draft[i] is accepted while it
    // equals target(i), and each accepted one makes target(i+1) the token plain decoding gives next.
    const int32_t* verify = plan.result.verify_argmax.data() + pc.verify_row;
    const int32_t last = plan.result.argmax[static_cast<size_t>(&pc - plan.chunks.data())];
    for (int32_t i = 0; i <= k; ++i) {
      pc.tokens.push_back(r.sampler.from_argmax(i < k ? verify[i] : last));
      if (i == k || pc.tokens.back().id != draft[static_cast<size_t>(i)]) break;
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
  if (pc.tokens.empty()) {
    fail(r, ErrorCode::kInternal, "sampling drew no token", now);
    return 0;
  }
  for (const GeneratedToken& t : pc.tokens) {
    if (t.id < 0 || t.id >= limits.vocab_size) {
      fail(r, ErrorCode::kInternal, "runner returned token id " + std::to_string(t.id) + " outside the vocabulary", now);
      return 0;
    }
  }
  const int32_t k = pc.chunk.n_draft;
  const auto accepted = static_cast<int32_t>(pc.tokens.size()) - 1;
  if (k > 0) {
    draft_tokens += k;
    accepted_tokens += accepted;
    r.draft_length.on_verified(k, accepted);  // before emitting: the last token's kFinished reports it
  }
  // Emitting stops with the request (a stop, EOS, max_tokens), so speculation never changes where
  // or how it ends.
  const std::string id = r.id;  // r is destroyed if it finishes
  sched::Sequence* seq = &r.seq;
  int32_t emitted = 0;
  for (const GeneratedToken& t : pc.tokens) {
    emit_token(r, t, now);
    ++emitted;
    if (!requests.count(id)) return emitted;  // finished: its blocks are freed already
  }
  if (k > 0) scheduler.on_draft_verified(seq, accepted);
  return emitted;
}

}  // namespace vks
