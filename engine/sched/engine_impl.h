#pragma once
// Engine internals shared by engine.cpp (the API, callable from any thread) and engine_loop.cpp
// (the scheduler thread).
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/grammar/token_constraint.h"
#include "engine/sched/block_manager.h"
#include "engine/sched/draft_length.h"
#include "engine/sched/drafter.h"
#include "engine/sched/embed_job.h"
#include "engine/sched/engine.h"
#include "engine/sched/event_queue.h"
#include "engine/sched/request_validation.h"
#include "engine/sched/sampler.h"
#include "engine/sched/scheduler.h"
#include "engine/sched/sequence.h"
#include "engine/sched/step_plan.h"
#include "engine/sched/stop_checker.h"

namespace vks {

namespace sched {
// One live request. Built by submit() on the caller's thread, then owned by the engine thread.
struct Request {
  Request(std::string id_, GenerateRequest params_, std::vector<int32_t> prompt, uint64_t seed, const Tokenizer& tok)
      : id(std::move(id_)),
        params(std::move(params_)),
        sampler(params.sampling, params.logprobs, seed),
        stop(params.stop, tok, prompt) {
    seq.tokens = std::move(prompt);
    seq.num_prompt_tokens = seq.num_tokens();
    seq.priority = params.priority;
  }
  std::string id;
  GenerateRequest params;  // prompt fields cleared
  Sequence seq;
  Sampler sampler;
  StopChecker stop;
  Clock::time_point submitted{};
  Clock::time_point first_scheduled{};
  Clock::time_point first_token{};
  Clock::time_point last_token{};
  bool scheduled_once = false;
  int32_t generated = 0;
  // Prefill progress (kProgress): the most prompt tokens reported, and when.
  int32_t prompt_reported = 0;
  Clock::time_point last_progress{};
  std::unique_ptr<grammar::TokenConstraint> constraint;  // null = unconstrained
  DraftLength draft_length;  // speculative decoding: off unless params.speculative / the config enable it
  // Speculative decoding's reused buffers: the history + accepted draft tokens of a verification's
  // draws, and a copy of the grammar state that checks a draft before it is verified.
  std::vector<int32_t> draft_history;
  std::optional<grammar::TokenConstraint> draft_grammar;
};

inline EngineEvent request_event(const Request& r, EventType type) {
  EngineEvent e;
  e.request_id = r.id;
  e.type = type;
  return e;
}
}  // namespace sched

struct Engine::Impl {
  Impl(std::unique_ptr<ModelRunner> runner, const Tokenizer& tokenizer, EngineConfig config,
       std::unique_ptr<ModelRunner> draft_runner);
  ~Impl();

  SubmitResult submit(GenerateRequest request);
  bool cancel(const std::string& id);
  EngineStats stats() const;

  // Engine thread (engine_loop.cpp).
  void run();
  void take_inbox(std::vector<std::unique_ptr<sched::Request>>& fresh, std::vector<std::string>& cancels, bool& stop,
                  std::vector<std::unique_ptr<sched::EmbedJob>>& fresh_embeds);
  void apply_cancels(const std::vector<std::string>& cancels);
  // Requests waiting to be scheduled, as max_queued counts them: an embed request whose inputs
  // wait counts once, not once per input (engine thread).
  int32_t waiting_admissions() const;
  void expire_deadlines(sched::Clock::time_point now);
  // One step (engine_step.cpp): schedule_step fills `plan` (false: nothing to run), run_step runs
  // it on the runner (a failure is recorded in the plan, never thrown), postprocess_step turns its
  // result into pooled embeddings, tokens and events.
  bool schedule_step(sched::StepPlan& plan);
  // Before scheduling: a draft (ngram_draft) for every running request that may speculate now.
  void propose_drafts();
  void run_step(sched::StepPlan& plan);
  void postprocess_step(sched::StepPlan& plan);
  void fail_step(sched::StepPlan& plan, sched::Clock::time_point now);
  std::vector<std::string> take_late_cancels();
  void draw(const sched::StepPlan& plan, sched::PlannedChunk& pc);  // on the sampling pool
  int32_t emit_draw(sched::PlannedChunk& pc, sched::Clock::time_point now);  // tokens emitted
  // engine_emit.cpp
  void emit_token(sched::Request& r, const GeneratedToken& tok, sched::Clock::time_point now);
  // After a step that read part of r's prompt (the chunk `c`): a kProgress event when one is due.
  void report_prefill(sched::Request& r, const sched::ScheduledChunk& c, sched::Clock::time_point now);
  void finish(sched::Request& r, FinishReason reason, sched::Clock::time_point now);
  void fail(sched::Request& r, ErrorCode code, const std::string& message, sched::Clock::time_point now);
  void end_all(FinishReason reason, const std::string& message);
  void publish_stats();
  std::vector<KvPoolStats> kv_pool_stats() const;  // the pools as stats reports them
  sched::Clock::time_point next_deadline() const;

  // Embed requests (engine_embed.cpp).
  SubmitResult submit_embed(EmbedRequest request);  // any thread
  sched::EmbedJob* embed_owner(const sched::Sequence* seq) const;  // null: a generate request's
  void add_embed_job(std::unique_ptr<sched::EmbedJob> job, sched::Clock::time_point now);
  // After a step: pools the hidden rows of one kEmbed chunk; a job whose inputs are now all pooled
  // is added to `done` (finished by the caller once the step's chunks are all handled).
  void pool_embed_chunk(const sched::PlannedChunk& pc, const StepResult& result, std::vector<sched::EmbedJob*>& done);
  void finish_embed(sched::EmbedJob& job, FinishReason reason, sched::Clock::time_point now);
  void fail_embed(sched::EmbedJob& job, ErrorCode code, const std::string& message, sched::Clock::time_point now);

  // Fixed at construction.
  std::unique_ptr<ModelRunner> runner;
  const Tokenizer& tokenizer;
  EngineConfig config;
  sched::SubmitLimits limits;
  std::vector<int32_t> eog_ids;
  // Grammar masking tables for the tokenizer's vocabulary.
  std::shared_ptr<const grammar::TokenIndex> token_index;
  // Requests with the same grammar/schema text share its compiled states and masks.
  std::mutex constraint_mu;
  std::unordered_map<std::string, std::weak_ptr<grammar::GrammarTable>> constraint_tables;  // by text
  // The most recently used tables, kept alive between requests: an agent's requests come one after
  // another with the same tools, and a table freed when its request ends is rebuilt state by state
  // (its masks were most of the tool grammar's cost per token).
  static constexpr size_t kKeptConstraintTables = 4;
  std::deque<std::shared_ptr<grammar::GrammarTable>> recent_constraint_tables;
  std::shared_ptr<grammar::GrammarTable> constraint_table(const std::string& gbnf, const std::string& json_schema);
  // Compiles (or finds) the request's grammar/schema into request.compiled_constraint; false with
  // the compile error (and its position) in `error`. Thread-safe.
  bool prepare_constraint(GenerateRequest& request, std::string& error);

  // Engine thread only.
  sched::BlockManager blocks;
  std::optional<sched::BlockManager> window_blocks;  // the window layers' pool, when the runner has one
  sched::Scheduler scheduler;
  sched::StepPlan step_plan;  // the current step's, reused (no allocation once warm)
  std::unordered_map<std::string, std::unique_ptr<sched::Request>> requests;
  std::unordered_map<const sched::Sequence*, sched::Request*> by_seq;
  std::unordered_map<std::string, std::unique_ptr<sched::EmbedJob>> embed_jobs;
  std::unordered_map<const sched::Sequence*, sched::EmbedJob*> embed_by_seq;
  std::deque<std::pair<sched::Clock::time_point, int32_t>> decode_window;  // (step end, tokens)
  std::deque<double> ttft_samples, itl_samples;
  double avg_request_ms = 500;
  bool last_step_empty = false;
  int64_t requests_finished = 0, tokens_generated = 0, prompt_tokens_processed = 0;
  // Loop turns that ran a step: their wall time (from the inbox drained to the step's events
  // queued) and the part spent inside runner->step (EngineStats::step_ms_total / runner_ms_total).
  int64_t draft_tokens = 0, accepted_tokens = 0;  // speculative decoding, all requests
  int64_t steps_run = 0;
  std::unique_ptr<sched::Drafter> drafter;  // prompt lookup, or the draft model
  std::vector<sched::DraftJob> draft_jobs;  // propose_drafts' list, reused
  sched::StepCost step_cost;  // the runner's decode step time by width (speculation's cost model)
  sched::StepCost draft_cost;  // the drafter's time per draft token, as width 1
  // The drafter's acceptance over finished requests, where new requests start when it carries over
  // (Drafter::acceptance_carries_over).
  sched::DraftLength drafter_record;
  // The drafter's time per token fed in a long catch-up (a request's first draft feeds it the
  // prompt): a shadow probe's price; 0 until one ran.
  double feed_ms_per_token = 0;
  double step_ms_total = 0, runner_ms_total = 0;

  // Shared with submitters: guarded by mu.
  mutable std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  std::vector<std::unique_ptr<sched::Request>> inbox;
  std::vector<std::unique_ptr<sched::EmbedJob>> embed_inbox;
  int32_t embed_inbox_jobs = 0;  // embed requests in embed_inbox (counted against max_queued once each)
  std::vector<std::string> cancel_inbox;
  std::unordered_set<std::string> live_ids;
  std::mt19937_64 id_rng;
  uint64_t next_arrival = 0;
  int32_t waiting_snapshot = 0;
  int32_t retry_after_ms = 500;
  int64_t requests_rejected = 0;

  mutable std::mutex stats_mu;
  EngineStats stats_snapshot;  // guarded by stats_mu
  std::vector<int32_t> kv_pool_peaks;  // per kv_pool_stats() entry: its blocks_used_peak so far

  sched::EventQueue events;
  ThreadPool pool;  // sampling helpers (config.worker_threads in all; 0: one per core, at most 16)
  std::thread thread;  // last: starts after everything above exists
};

}  // namespace vks
