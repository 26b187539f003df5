// Daemon: the one admission of every generation and embedding, whatever the transport (Unix socket,
// ZeroMQ, HTTP): the checks (shutting down, the client's live requests against
// max_requests_per_connection, a chosen id already used), the engine's submit, and the
// registration (the stream registry or the pending embeds). Transports render the outcome: an
// `accepted` answer or an error frame, an HTTP answer.
#include <spdlog/spdlog.h>

#include "protocol/topic.h"
#include "server/context_bound.h"
#include "server/daemon.h"

namespace vks::server {

std::optional<Daemon::Admission> Daemon::admission_check(const ClientRef& from, const std::string& id) {
  Admission refused;
  const std::string owner = owner_key(from);
  int32_t live = registry_.live_count_of(owner);  // streams and embeds alike
  for (const auto& [embed_id, p] : pending_embeds_) live += p.owner_key == owner ? 1 : 0;
  if (phase_ != Phase::kServing) {
    refused.error = proto::make_error(proto::WireError::kShuttingDown, "the server is shutting down; retry after it restarts");
  } else if (live >= limits_.max_requests_per_connection) {
    refused.error = proto::make_error(proto::WireError::kTooManyRequests,
                                      "this connection already has " + std::to_string(limits_.max_requests_per_connection) +
                                          " running requests (max_requests_per_connection)");
    refused.retry_after_ms = 100;
  } else if (!id.empty() && (registry_.contains(id) || pending_embeds_.count(id) > 0 || preparing_.contains(id))) {
    refused.error = proto::make_error(proto::WireError::kAlreadyExists,
                                      "request id '" + id + "' is already live or retained; choose another", "id");
    refused.error_id = id;
  } else {
    return std::nullopt;
  }
  ++requests_rejected_;
  spdlog::info("{}: rejected: {}", from.describe(), refused.error.message);
  return refused;
}

Daemon::Admission Daemon::admit_generate(const ClientRef& from, ModelSlot& model, GenerateJob& job) {
  touch();
  if (std::optional<Admission> refused = admission_check(from, job.request.id)) return *refused;
  Admission a;
  if (!model.loaded()) {  // cannot happen: a model is never unloaded while a request of it is prepared
    a.error = proto::make_error(proto::WireError::kInternal, "model '" + model.file.name + "' is not loaded", "model");
    return a;
  }
  if (job.max_context_tokens > 0) {  // the request's own context: its prompt's length is needed now
    if (job.request.prompt_ids.empty()) tokenize_prompt(*model.served, job.request);  // short: cheap
    if (std::optional<proto::ProtocolError> e =
            bound_to_context(job.max_context_tokens, static_cast<int32_t>(job.request.prompt_ids.size()),
                             model.served->engine->kv_capacity_tokens(), job.request.stop.max_tokens)) {
      ++requests_rejected_;
      spdlog::info("{}: generate rejected: {}", from.describe(), e->message);
      a.error = std::move(*e);
      a.error_id = job.request.id;
      return a;
    }
  }
  const bool with_logprobs = job.request.logprobs >= 0;
  const std::string chosen_id = job.request.id;
  const SubmitResult result = model.served->engine->submit(std::move(job.request));
  if (!result.ok) {
    ++requests_rejected_;
    spdlog::info("{}: generate rejected: {}", from.describe(), result.message);
    a.error = error_from_submit(result, limits_.max_prompt_tokens);
    a.error_id = chosen_id;
    a.retry_after_ms = result.retry_after_ms;
    return a;
  }
  ++model.running;
  StreamEntry entry;
  entry.id = result.id;
  entry.model = model.file.name;
  entry.load_ms = load_wait_ms(model, job.arrived);
  entry.topic = proto::topic_for(proto::stream_token_from(rng_));
  entry.owner = from;
  // HTTP answers are rendered from the events by the front end; a REQ peer takes the next message
  // after its next send as the answer: never stream to either.
  entry.stream_to_owner = job.stream && !from.zmq_envelope && from.transport != Transport::kHttp;
  entry.detached = job.detached;
  entry.with_logprobs = with_logprobs;
  entry.queue_position = result.queue_position;
  entry.prompt_tokens = result.prompt_tokens;
  entry.tool_calls = std::move(job.tool_calls);  // before any of its engine events (handled on this thread, later)
  const StreamEntry& e = registry_.add(std::move(entry));
  ++requests_total_;
  spdlog::info("{}: generate {} accepted on {} ({} prompt tokens, topic {}{})", from.describe(), e.id, e.model,
               e.prompt_tokens, e.topic, e.detached ? ", detached" : "");
  a.ok = true;
  a.id = e.id;
  a.topic = e.topic;
  a.queue_position = e.queue_position;
  a.prompt_tokens = e.prompt_tokens;
  return a;
}

Daemon::Admission Daemon::admit_embed(const ClientRef& from, const proto::Tag& tag, ModelSlot& model,
                                      EmbedRequest& request) {
  touch();
  if (std::optional<Admission> refused = admission_check(from, request.id)) return *refused;
  Admission a;
  if (!model.loaded()) {
    a.error = proto::make_error(proto::WireError::kInternal, "model '" + model.file.name + "' is not loaded", "model");
    return a;
  }
  const std::string chosen_id = request.id;
  const SubmitResult result = model.served->engine->submit_embed(std::move(request));
  if (!result.ok) {
    ++requests_rejected_;
    spdlog::info("{}: embed rejected: {}", from.describe(), result.message);
    a.error = error_from_embed_submit(result);
    a.error_id = chosen_id;
    a.retry_after_ms = result.retry_after_ms;
    return a;
  }
  ++requests_total_;
  ++model.running;
  PendingEmbed& p = pending_embeds_[result.id];
  p.model = model.file.name;
  p.owner = from;
  p.owner_key = owner_key(from);
  p.tag = tag;
  spdlog::debug("{}: embed {} accepted on {} ({} tokens)", from.describe(), result.id, model.file.name,
                result.prompt_tokens);
  a.ok = true;
  a.id = result.id;
  a.prompt_tokens = result.prompt_tokens;
  return a;
}

}  // namespace vks::server
