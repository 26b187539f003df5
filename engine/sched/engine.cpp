#include "engine/sched/engine.h"

#include <algorithm>
#include <cstdio>

#include "engine/grammar/compile.h"
#include "engine/model/kv_pools.h"
#include "engine/sched/draft_length.h"
#include "engine/sched/engine_impl.h"

namespace vks {

namespace {

EngineConfig resolve(EngineConfig c, const ModelRunner& runner) {
  if (c.max_seqs <= 0) throw Error(ErrorCode::kInvalidArgument, "engine config: max_seqs must be > 0");
  if (c.max_batched_tokens <= 0) throw Error(ErrorCode::kInvalidArgument, "engine config: max_batched_tokens must be > 0");
  if (c.max_queued <= 0) throw Error(ErrorCode::kInvalidArgument, "engine config: max_queued must be > 0");
  if (c.kv_blocks_limit < 0) throw Error(ErrorCode::kInvalidArgument, "engine config: kv_blocks_limit must be >= 0");
  if (!(c.aging_ms > 0)) throw Error(ErrorCode::kInvalidArgument, "engine config: aging_ms must be > 0");
  if (c.speculative_draft < 0 || c.speculative_draft > sched::kMaxDraftTokens) {
    throw Error(ErrorCode::kInvalidArgument, "engine config: speculative_draft must be in [0, 16]");
  }
  if (c.worker_threads < 0 || c.worker_threads > 256) {
    throw Error(ErrorCode::kInvalidArgument, "engine config: worker_threads must be in [0, 256]");
  }
  c.max_seqs = std::min(c.max_seqs, runner.max_step_seqs());
  // A recurrent state per live sequence; a cached prefix also needs the state at its end, which
  // only a runner with checkpoint slots keeps (scheduler.h): without them every prompt is recomputed.
  if (runner.recurrent_state_slots() > 0) {
    c.max_seqs = std::min(c.max_seqs, runner.recurrent_state_slots());
    if (runner.recurrent_checkpoint_slots() <= 0) c.prefix_caching = false;
  }
  c.max_batched_tokens = std::min(c.max_batched_tokens, runner.max_step_tokens());
  if (c.max_batched_tokens < c.max_seqs) c.max_seqs = c.max_batched_tokens;  // every decode must fit a step
  if (c.max_seqs <= 0) throw Error(ErrorCode::kInvalidArgument, "engine config: the runner allows no sequences per step");
  return c;
}

int32_t kv_blocks_for(const EngineConfig& c, const ModelRunner& runner) {
  if (runner.num_blocks() <= 0 || runner.block_size() <= 0) throw Error(ErrorCode::kInvalidArgument, "runner has no KV blocks");
  return c.kv_blocks_limit > 0 ? std::min(c.kv_blocks_limit, runner.num_blocks()) : runner.num_blocks();
}

// The window layers' own pool (engine/model/kv_pools.h), when the runner keeps one.
std::optional<sched::BlockManager> window_pool(const EngineConfig& c, const ModelRunner& runner) {
  if (runner.num_window_blocks() <= 0) return std::nullopt;
  if (window_pool_window(runner.config()) == 0) {
    throw Error(ErrorCode::kInvalidArgument, "runner has a window pool but the model has no window layers beside full ones");
  }
  return std::optional<sched::BlockManager>(std::in_place, runner.num_window_blocks(), runner.block_size(), c.prefix_caching);
}

sched::SchedulerConfig scheduler_config(const EngineConfig& c, const ModelRunner& runner) {
  sched::SchedulerConfig s;
  s.kv_window = runner.num_window_blocks() > 0 ? static_cast<int32_t>(window_pool_window(runner.config())) : 0;
  // A recurrent state cannot roll rejected draft tokens back: no drafts for such models.
  s.max_draft_tokens = runner.recurrent_state_slots() > 0 ? 0 : std::max(0, runner.max_step_seqs() - c.max_seqs);
  s.state_slots = runner.recurrent_state_slots();
  s.state_checkpoints = runner.recurrent_checkpoint_slots();
  s.max_batched_tokens = c.max_batched_tokens;
  s.max_seqs = c.max_seqs;
  s.priority_policy = c.policy == SchedulingPolicy::kPriority;
  s.aging_ms = c.aging_ms;
  return s;
}

SubmitResult rejected(ErrorCode code, std::string message) {
  SubmitResult r;
  r.code = code;
  r.message = std::move(message);
  return r;
}

}  // namespace

Engine::Impl::Impl(std::unique_ptr<ModelRunner> runner_, const Tokenizer& tok, EngineConfig cfg,
                   std::unique_ptr<ModelRunner> draft_runner)
    : runner(std::move(runner_)),
      tokenizer(tok),
      config(resolve(cfg, *runner)),
      blocks(kv_blocks_for(config, *runner), runner->block_size(), config.prefix_caching),
      window_blocks(window_pool(config, *runner)),
      scheduler(scheduler_config(config, *runner), blocks, window_blocks ? &*window_blocks : nullptr),
      id_rng(std::random_device{}()),
      pool(config.worker_threads > 0 ? config.worker_threads : std::min(ThreadPool::hardware_threads(), 16)) {
  const LlamaConfig& mc = runner->config();
  limits.vocab_size = static_cast<int32_t>(mc.vocab_size);
  limits.context_length = static_cast<int32_t>(mc.context_length);
  limits.max_prompt_tokens = config.max_prompt_tokens > 0 ? std::min<int32_t>(config.max_prompt_tokens, limits.context_length)
                                                          : limits.context_length;
  limits.max_new_tokens = config.max_new_tokens > 0 ? std::min<int32_t>(config.max_new_tokens, limits.context_length)
                                                    : limits.context_length;
  limits.kv_blocks = blocks.num_blocks();
  limits.block_size = blocks.block_size();
  // A prompt longer than the KV cache can never run: it is over the prompt limit like one longer
  // than the context, so that one condition gets one answer on every device (the Vulkan runner's
  // cache is often smaller than the context, the CPU's not) and the limit the daemon advertises in
  // hello is the one enforced.
  limits.max_prompt_tokens = std::min<int32_t>(limits.max_prompt_tokens, limits.kv_blocks * limits.block_size);
  if (tokenizer.vocab_size() > limits.vocab_size) {
    throw Error(ErrorCode::kInvalidArgument, "tokenizer vocabulary is larger than the model's");
  }
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.is_eog(id)) eog_ids.push_back(id);
  }
  token_index = std::make_shared<grammar::TokenIndex>(tokenizer);  // grammar masking tables
  if (draft_runner) {
    if (draft_runner->config().vocab_size != mc.vocab_size) {
      throw Error(ErrorCode::kInvalidArgument, "the draft model's vocabulary (" +
                                                   std::to_string(draft_runner->config().vocab_size) +
                                                   " tokens) differs from the model's (" +
                                                   std::to_string(mc.vocab_size) + ")");
    }
    // A draft slot rolls back by keeping its KV prefix; a recurrent state holds no prefix to keep.
    if (draft_runner->recurrent_state_slots() > 0) {
      throw Error(ErrorCode::kUnsupported, "the draft model has recurrent layers, whose state cannot roll back to the "
                                           "accepted tokens: a draft model must be attention-only");
    }
    drafter = sched::make_model_drafter(std::move(draft_runner), config.max_seqs);
  } else {
    drafter = sched::make_ngram_drafter();
  }
  publish_stats();
  thread = std::thread([this] { run(); });
}

Engine::Impl::~Impl() {
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  wake.notify_all();
  if (thread.joinable()) thread.join();
}

SubmitResult Engine::Impl::submit(GenerateRequest req) {
  int32_t n_tokenized = 0;  // reported with rejections once known (the protocol maps prompt_too_long)
  auto reject = [&](ErrorCode code, std::string message) {
    std::lock_guard lock(mu);
    ++requests_rejected;
    SubmitResult r = rejected(code, std::move(message));
    r.prompt_tokens = n_tokenized;
    return r;
  };
  try {
    if (auto bad = sched::check_params(req, limits)) return reject(bad->code, bad->message);
    std::vector<int32_t> prompt;
    // Messages name the wire's field: `prompt` for text (prompt_text is the engine's own name).
    const char* field = req.prompt_ids_from_text ? "prompt" : "prompt_ids";
    if (!req.prompt_ids.empty()) {
      prompt = req.prompt_ids;
    } else {
      prompt = tokenizer.encode(req.prompt_text, req.add_bos.value_or(tokenizer.add_bos_default()));
      field = "prompt";
    }
    n_tokenized = static_cast<int32_t>(prompt.size());
    if (auto bad = sched::check_prompt(prompt, limits, field)) return reject(bad->code, bad->message);
    if (auto bad = sched::check_fits(static_cast<int32_t>(prompt.size()), req.stop.max_tokens, limits)) {
      return reject(bad->code, bad->message);
    }
    std::unique_ptr<grammar::TokenConstraint> constraint;
    if (!req.grammar.empty() || !req.json_schema.empty()) {
      std::string error;
      if (!prepare_constraint(req, error)) return reject(ErrorCode::kInvalidArgument, error);
      constraint = std::make_unique<grammar::TokenConstraint>(req.compiled_constraint);
    }
    if (req.stop.max_tokens == 0) {
      req.stop.max_tokens = sched::room_to_generate(static_cast<int32_t>(prompt.size()), limits);
      if (req.stop.min_tokens > req.stop.max_tokens) {  // the wire could not check it: max_tokens was unset
        return reject(ErrorCode::kInvalidArgument,
                      "min_tokens: " + std::to_string(req.stop.min_tokens) + " exceeds the " +
                          std::to_string(req.stop.max_tokens) + " tokens left in the context after the prompt");
      }
    }
    req.prompt_ids.clear();
    req.prompt_text.clear();
    const int32_t n_prompt = static_cast<int32_t>(prompt.size());

    std::unique_lock lock(mu);
    if (stopping) return rejected(ErrorCode::kCancelled, "engine is shutting down");
    if (waiting_snapshot + static_cast<int32_t>(inbox.size()) >= config.max_queued) {
      ++requests_rejected;
      SubmitResult r = rejected(ErrorCode::kOverloaded, std::to_string(config.max_queued) +
                                                            " requests are waiting (max_queued); retry later");
      r.retry_after_ms = retry_after_ms;
      return r;
    }
    std::string id = req.id;
    if (id.empty()) {
      do {
        char buf[33];
        std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(id_rng()),
                      static_cast<unsigned long long>(id_rng()));
        id = buf;
      } while (live_ids.count(id));
    } else if (live_ids.count(id)) {
      ++requests_rejected;
      return rejected(ErrorCode::kInvalidArgument, "id: request '" + id + "' is already live");
    }
    const uint64_t seed = req.sampling.seed ? *req.sampling.seed : id_rng();
    const uint64_t arrival = next_arrival++;
    lock.unlock();  // building the request (detokenizer, sampler) needs no lock

    auto r = std::make_unique<sched::Request>(id, std::move(req), std::move(prompt), seed, tokenizer);
    r->constraint = std::move(constraint);
    const int32_t asked = r->params.speculative.value_or(config.speculative_draft);
    r->draft_length = sched::DraftLength(asked >= 0 ? asked : config.speculative_draft > 0 ? config.speculative_draft : 4);
    r->seq.arrival = arrival;
    r->submitted = sched::Clock::now();
    lock.lock();
    if (stopping) return rejected(ErrorCode::kCancelled, "engine is shutting down");
    if (!live_ids.insert(id).second) return rejected(ErrorCode::kInvalidArgument, "id: request '" + id + "' is already live");
    SubmitResult ok;
    ok.ok = true;
    ok.id = id;
    ok.prompt_tokens = n_prompt;
    ok.queue_position = waiting_snapshot + static_cast<int32_t>(inbox.size());
    inbox.push_back(std::move(r));
    lock.unlock();
    wake.notify_all();
    return ok;
  } catch (const Error& e) {
    return reject(e.code(), e.what());
  } catch (const std::exception& e) {
    return reject(ErrorCode::kInternal, e.what());
  }
}

bool Engine::Impl::prepare_constraint(GenerateRequest& request, std::string& error) {
  if (request.compiled_constraint || (request.grammar.empty() && request.json_schema.empty())) return true;
  try {
    request.compiled_constraint = constraint_table(request.grammar, request.json_schema);
    return true;
  } catch (const grammar::CompileError& e) {  // anything else is the caller's internal error
    error = e.what();
    return false;
  }
}

std::shared_ptr<grammar::GrammarTable> Engine::Impl::constraint_table(const std::string& gbnf,
                                                                      const std::string& json_schema) {
  std::string key(gbnf.empty() ? "json_schema\n" : "grammar\n");
  key.append(gbnf.empty() ? json_schema : gbnf);
  auto keep = [this](const std::shared_ptr<grammar::GrammarTable>& table) {  // with constraint_mu held
    std::erase(recent_constraint_tables, table);
    recent_constraint_tables.push_front(table);
    if (recent_constraint_tables.size() > kKeptConstraintTables) recent_constraint_tables.pop_back();
  };
  {
    std::lock_guard lock(constraint_mu);
    const auto it = constraint_tables.find(key);
    if (it != constraint_tables.end()) {
      if (auto table = it->second.lock()) {
        keep(table);
        return table;
      }
    }
  }
  auto compiled = grammar::compile_constraint(gbnf, json_schema);  // throws CompileError
  auto table = std::make_shared<grammar::GrammarTable>(std::move(compiled), token_index);
  std::lock_guard lock(constraint_mu);
  if (constraint_tables.size() >= 64) {
    std::erase_if(constraint_tables, [](const auto& kv) { return kv.second.expired(); });
  }
  constraint_tables[key] = table;
  keep(table);
  return table;
}

bool Engine::Impl::cancel(const std::string& id) {
  {
    std::lock_guard lock(mu);
    if (!live_ids.count(id)) return false;
    cancel_inbox.push_back(id);
  }
  wake.notify_all();
  return true;
}

EngineStats Engine::Impl::stats() const {
  std::lock_guard lock(stats_mu);
  EngineStats s = stats_snapshot;
  std::lock_guard lock2(mu);
  s.requests_rejected = requests_rejected;
  return s;
}

Engine::Engine(std::unique_ptr<ModelRunner> runner, const Tokenizer& tokenizer, EngineConfig config,
               std::unique_ptr<ModelRunner> draft_runner) {
  if (!runner) throw Error(ErrorCode::kInvalidArgument, "engine needs a model runner");
  impl_ = std::make_unique<Impl>(std::move(runner), tokenizer, config, std::move(draft_runner));
}

Engine::~Engine() = default;

void Engine::set_event_notifier(std::function<void()> notify) { impl_->events.set_notifier(std::move(notify)); }
SubmitResult Engine::submit(GenerateRequest request) { return impl_->submit(std::move(request)); }
bool Engine::cancel(const std::string& id) { return impl_->cancel(id); }
bool Engine::prepare_constraint(GenerateRequest& request, std::string& error) {
  return impl_->prepare_constraint(request, error);
}
size_t Engine::poll_events(std::vector<EngineEvent>& out) { return impl_->events.poll(out); }
EngineStats Engine::stats() const { return impl_->stats(); }
const LlamaConfig& Engine::model_config() const { return impl_->runner->config(); }
std::string Engine::device_name() const { return impl_->runner->device_name(); }
uint64_t Engine::kv_bytes_per_token() const { return impl_->runner->kv_bytes_per_token(); }
std::string Engine::kv_type() const { return impl_->runner->kv_type(); }
int32_t Engine::kv_capacity_tokens() const { return impl_->limits.kv_blocks * impl_->limits.block_size; }

uint64_t Engine::kv_pool_bytes() const {
  const ModelRunner& r = *impl_->runner;
  const uint64_t window_per_token = r.kv_window_bytes_per_token();
  const uint64_t full = uint64_t(impl_->limits.kv_blocks) * (r.kv_bytes_per_token() - window_per_token);
  const uint64_t window = uint64_t(std::max(0, r.num_window_blocks())) * window_per_token;
  return (full + window) * uint64_t(impl_->limits.block_size);
}
uint64_t Engine::recurrent_state_bytes() const {
  const ModelRunner& r = *impl_->runner;
  const int64_t slots = int64_t{r.recurrent_state_slots()} + r.recurrent_checkpoint_slots();
  return uint64_t(std::max<int64_t>(slots, 0)) * r.config().recurrent_state_bytes();
}
int32_t Engine::max_prompt_tokens() const { return impl_->limits.max_prompt_tokens; }

}  // namespace vks
