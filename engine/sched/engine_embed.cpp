// Embed requests: submit (any thread) validates and tokenizes every input; on the engine thread
// each input is one Sequence that the scheduler prefills like a prompt (chunked, batched with
// generation) with LogitsMode::kHidden, and its hidden-state rows are pooled as they arrive. An
// input's KV blocks are freed as soon as it is pooled; the job finishes (one kFinished carrying
// every vector) when the last input is.
#include <algorithm>
#include <cstdio>
#include <limits>

#include "engine/sched/engine_impl.h"

namespace vks {

using sched::Clock;
using sched::ms_between;
using sched::EmbedJob;


SubmitResult Engine::Impl::submit_embed(EmbedRequest req) {
  int32_t reported_tokens = 0;  // an input that is too long reports its own length
  auto reject = [&](ErrorCode code, std::string message) {
    std::lock_guard lock(mu);
    ++requests_rejected;
    SubmitResult r;
    r.code = code;
    r.message = std::move(message);
    r.prompt_tokens = reported_tokens;
    return r;
  };
  try {
    if (!req.id.empty() && !sched::valid_request_id(req.id)) {
      return reject(ErrorCode::kInvalidArgument, "id: must be 1..64 characters of [A-Za-z0-9._-]");
    }
    if (req.priority < sched::kMinPriority || req.priority > sched::kMaxPriority) {
      return reject(ErrorCode::kInvalidArgument, "priority: must be in [-1000, 1000], got " + std::to_string(req.priority));
    }
    const bool from_text = req.token_inputs.empty();
    const size_t n_inputs = from_text ? req.texts.size() : req.token_inputs.size();
    const std::string field = from_text || req.inputs_from_text ? "input" : "tokens";
    if (n_inputs == 0) return reject(ErrorCode::kInvalidArgument, "input: no inputs (give input texts or tokens)");
    if (n_inputs > kMaxEmbedInputs) {
      return reject(ErrorCode::kInvalidArgument, field + ": " + std::to_string(n_inputs) + " inputs, at most " +
                                                     std::to_string(kMaxEmbedInputs) + " per request");
    }
    std::vector<std::vector<int32_t>> inputs;
    if (from_text) {
      inputs.reserve(n_inputs);
      for (size_t i = 0; i < n_inputs; ++i) {
        if (!sched::valid_utf8(req.texts[i])) {
          return reject(ErrorCode::kInvalidArgument, "input." + std::to_string(i) + ": not valid UTF-8");
        }
        inputs.push_back(tokenizer.encode(req.texts[i], req.add_bos.value_or(tokenizer.add_bos_default())));
      }
    } else {
      inputs = std::move(req.token_inputs);
    }
    // Every input runs as one sequence: it must fit the context (and max_prompt_tokens) and the KV cache.
    const int64_t capacity = static_cast<int64_t>(limits.kv_blocks) * limits.block_size;
    int64_t total = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string name = field + "." + std::to_string(i);
      const std::vector<int32_t>& ids = inputs[i];
      if (ids.empty()) return reject(ErrorCode::kInvalidArgument, name + ": the input has no tokens");
      for (size_t k = 0; k < ids.size(); ++k) {
        if (ids[k] < 0 || ids[k] >= limits.vocab_size) {
          return reject(ErrorCode::kInvalidArgument, name + "." + std::to_string(k) + ": unknown token id " +
                                                         std::to_string(ids[k]) + " (vocabulary has " +
                                                         std::to_string(limits.vocab_size) + ")");
        }
      }
      const int64_t n = static_cast<int64_t>(ids.size());
      if (n > limits.max_prompt_tokens) {
        reported_tokens = static_cast<int32_t>(n);
        return reject(ErrorCode::kInvalidArgument,
                      name + ": " + std::to_string(n) + " tokens exceed the limit of " +
                          std::to_string(limits.max_prompt_tokens) + " tokens per input (the context length is " +
                          std::to_string(limits.context_length) + ")");
      }
      if (n > capacity) {
        reported_tokens = static_cast<int32_t>(n);
        return reject(ErrorCode::kOutOfMemory, name + ": " + std::to_string(n) + " tokens exceed the whole KV cache of " +
                                                   std::to_string(capacity) + " tokens");
      }
      total += n;
    }
    const Pooling pooling = req.pooling.value_or(pooling_from_gguf(runner->config().pooling_type));
    const size_t dim = runner->config().dim;

    auto job = std::make_unique<EmbedJob>();
    job->normalize = req.normalize;
    job->deadline = req.deadline;
    job->prompt_tokens = static_cast<int32_t>(std::min<int64_t>(total, std::numeric_limits<int32_t>::max()));
    job->remaining = static_cast<int32_t>(inputs.size());
    for (std::vector<int32_t>& ids : inputs) {
      auto in = std::make_unique<sched::EmbedInput>(std::move(ids), pooling, dim);
      in->seq.priority = req.priority;
      job->inputs.push_back(std::move(in));
    }

    std::unique_lock lock(mu);
    if (stopping) return reject(ErrorCode::kCancelled, "engine is shutting down");
    // One admission however many inputs: a batch of 2,048 inputs (the documented maximum) must not
    // lock every other client out of a queue of 256.
    const int32_t queued = waiting_snapshot + static_cast<int32_t>(inbox.size()) + embed_inbox_jobs;
    if (queued >= config.max_queued) {
      ++requests_rejected;
      SubmitResult r;
      r.code = ErrorCode::kOverloaded;
      r.message = "overloaded: " + std::to_string(config.max_queued) + " requests are waiting (max_queued); retry later";
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
      SubmitResult r;
      r.code = ErrorCode::kInvalidArgument;
      r.message = "id: request '" + id + "' is already live";
      return r;
    }
    live_ids.insert(id);
    job->id = id;
    for (auto& in : job->inputs) in->seq.arrival = next_arrival++;
    job->submitted = Clock::now();
    SubmitResult ok;
    ok.ok = true;
    ok.id = id;
    ok.prompt_tokens = job->prompt_tokens;
    ok.queue_position = queued;
    ++embed_inbox_jobs;
    embed_inbox.push_back(std::move(job));
    lock.unlock();
    wake.notify_all();
    return ok;
  } catch (const Error& e) {
    return reject(e.code(), e.what());
  } catch (const std::exception& e) {
    return reject(ErrorCode::kInternal, e.what());
  }
}

sched::EmbedJob* Engine::Impl::embed_owner(const sched::Sequence* seq) const {
  if (embed_by_seq.empty()) return nullptr;
  const auto it = embed_by_seq.find(seq);
  return it == embed_by_seq.end() ? nullptr : it->second;
}

void Engine::Impl::add_embed_job(std::unique_ptr<EmbedJob> job, Clock::time_point now) {
  EmbedJob& j = *job;
  embed_jobs[j.id] = std::move(job);
  for (auto& in : j.inputs) {
    embed_by_seq[&in->seq] = &j;
    scheduler.add(&in->seq, now);
  }
}

void Engine::Impl::pool_embed_chunk(const sched::PlannedChunk& pc, const StepResult& result, std::vector<EmbedJob*>& done) {
  const size_t dim = runner->config().dim;
  const sched::ScheduledChunk& c = pc.chunk;
  EmbedJob* job = pc.embed;
  const float* rows = result.hidden.data() + static_cast<size_t>(pc.hidden_row) * dim;
  auto it = std::find_if(job->inputs.begin(), job->inputs.end(), [&](const auto& in) { return &in->seq == c.seq; });
  if (it == job->inputs.end() || (*it)->done) return;
  sched::EmbedInput& in = **it;
  in.pooler.add(c.n_past, rows, c.n_tokens);
  if (!in.pooler.complete()) return;
  in.vector = in.pooler.result(job->normalize);
  in.done = true;
  scheduler.remove(&in.seq);  // frees its KV blocks now; the job may wait for other inputs
  if (--job->remaining == 0) done.push_back(job);
}

void Engine::Impl::fail_embed(EmbedJob& job, ErrorCode code, const std::string& message, Clock::time_point now) {
  EngineEvent e;
  e.request_id = job.id;
  e.type = EventType::kError;
  e.error_code = code;
  e.error_message = message;
  events.add(std::move(e));
  finish_embed(job, FinishReason::kError, now);
}

void Engine::Impl::finish_embed(EmbedJob& job, FinishReason reason, Clock::time_point now) {
  EngineEvent e;
  e.request_id = job.id;
  e.type = EventType::kFinished;
  e.reason = reason;
  e.usage.prompt_tokens = job.prompt_tokens;
  if (reason == FinishReason::kStop) {
    e.embeddings.reserve(job.inputs.size());
    for (auto& in : job.inputs) e.embeddings.push_back(std::move(in->vector));
  }
  e.timings.queue_ms = job.scheduled_once ? ms_between(job.submitted, job.first_scheduled) : ms_between(job.submitted, now);
  e.timings.total_ms = ms_between(job.submitted, now);
  events.add(std::move(e));

  ++requests_finished;
  for (auto& in : job.inputs) {
    scheduler.remove(&in->seq);
    embed_by_seq.erase(&in->seq);
  }
  const std::string id = job.id;
  {
    std::lock_guard lock(mu);
    live_ids.erase(id);
  }
  embed_jobs.erase(id);  // destroys job
}

SubmitResult Engine::submit_embed(EmbedRequest request) { return impl_->submit_embed(std::move(request)); }

}  // namespace vks
