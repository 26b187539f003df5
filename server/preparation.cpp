// Daemon: the one off-loop preparation of a generation, for every transport and kind (a generate's
// long prompt, a chat's rendering, an HTTP request's either): the preparation itself (tokenize or
// render into the job's prompt ids), then the grammar or JSON Schema compile (a big one takes far
// longer than rendering), on libuv's pool; the outcome on the loop thread. The model stays loaded
// while it runs (the work holds its ServedModel).
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>

#include "engine/chat/jinja_budget.h"
#include "server/chat_render.h"
#include "server/daemon.h"

namespace vks::server {

void Daemon::prepare_off_loop(const ClientRef& from, ModelSlot& model, std::shared_ptr<GenerateJob> job,
                              Preparation prepare, OffLoop::Cost cost, bool stop_with_client,
                              std::function<bool()> still_wanted, Prepared then) {
  std::shared_ptr<ServedModel> served = model.served;  // kept loaded while the work runs
  ModelSlot* slot = &model;  // stays: a model is never unloaded while its ServedModel is held
  auto prepared_error = std::make_shared<std::optional<proto::ProtocolError>>();
  auto compile_error = std::make_shared<std::string>();
  // Set when the client goes away (OffLoop::forget, unless the request outlives it) or when a
  // cancel names the request's id (preparing_): a render in progress stops.
  const std::string id = job->request.id;
  auto stop = stop_with_client || !id.empty() ? std::make_shared<std::atomic<bool>>(false) : nullptr;
  if (!id.empty() && !preparing_.add(id, stop)) {
    const proto::ProtocolError taken = proto::make_error(
        proto::WireError::kAlreadyExists, "request id '" + id + "' is already live or retained; choose another", "id");
    return then(model, *job, &taken);
  }
  off_loop_.run(
      &loop_, owner_key(from),
      [served, job, prepare = std::move(prepare), prepared_error, compile_error, stop] {
        jinja::RenderScope renders(kRequestRenderTime, stop.get());
        *prepared_error = prepare(*served, job->request);
        if (!*prepared_error) served->engine->prepare_constraint(job->request, *compile_error);  // thread-safe
      },
      [this, from, job, served, slot, prepared_error, compile_error, still_wanted = std::move(still_wanted),
       then = std::move(then), id](std::exception_ptr error) {
        const bool cancelled = !id.empty() && preparing_.finish(id);
        if (!handles_open_ || !still_wanted()) {  // shut down, or the client went away: nothing started
          spdlog::debug("{}: gone while its request was prepared; request dropped", from.describe());
          return;
        }
        std::optional<proto::ProtocolError> failure;
        if (cancelled) {  // whatever the preparation made of it (its render stopped midway, most likely)
          failure = proto::make_error(proto::WireError::kCancelled,
                                      "request '" + id + "' was cancelled while it was prepared", "id");
        } else if (error) {
          failure = proto::make_error(proto::WireError::kInternal, "preparing the request failed: " + what_of(error), "prompt");
        } else if (*prepared_error) {
          failure = std::move(*prepared_error);
        } else if (!compile_error->empty()) {  // answered exactly as Engine::submit would have
          SubmitResult rejected;
          rejected.code = ErrorCode::kInvalidArgument;
          rejected.message = *compile_error;
          failure = error_from_submit(rejected, limits_.max_prompt_tokens);
        }
        if (failure) {
          ++requests_rejected_;
          spdlog::info("{}: rejected: {}", from.describe(), failure->message);
          return then(*slot, *job, &*failure);
        }
        if (job->request.prompt_ids.empty()) job->request.prompt_ids_from_text = false;
        then(*slot, *job, nullptr);
      },
      stop_with_client ? stop : nullptr, cost);
}

void Daemon::prepare_embed(const ClientRef& from, ModelSlot& model, std::shared_ptr<EmbedRequest> request,
                           std::function<bool()> still_wanted, EmbedPrepared then) {
  size_t text_bytes = 0;
  for (const std::string& t : request->texts) text_bytes += t.size();
  if (text_bytes < kOffLoopMinTextBytes) return then(model, *request, nullptr);  // a pool round trip costs more
  std::shared_ptr<ServedModel> served = model.served;  // kept loaded while the work runs
  ModelSlot* slot = &model;  // stays: a model is never unloaded while its ServedModel is held
  off_loop_.run(
      &loop_, owner_key(from), [served, request] { tokenize_embed_inputs(*request, *served->tokenizer); },
      [this, from, request, served, slot, still_wanted = std::move(still_wanted),
       then = std::move(then)](std::exception_ptr error) {
        if (!handles_open_ || !still_wanted()) {  // shut down, or the client went away: nothing started
          spdlog::debug("{}: gone while its embed inputs were tokenized; request dropped", from.describe());
          return;
        }
        if (error) {
          ++requests_rejected_;
          const proto::ProtocolError e =
              proto::make_error(proto::WireError::kInternal, "tokenizing the inputs failed: " + what_of(error), "input");
          return then(*slot, *request, &e);
        }
        then(*slot, *request, nullptr);
      });
}

bool Daemon::needs_preparation(const GenerateRequest& req) {
  const bool long_text = req.prompt_ids.empty() && req.prompt_text.size() >= kOffLoopMinTextBytes;
  const bool constrained = (!req.grammar.empty() || !req.json_schema.empty()) && !req.compiled_constraint;
  return long_text || constrained;
}

std::optional<proto::ProtocolError> Daemon::tokenize_prompt(ServedModel& served, GenerateRequest& q) {
  const Tokenizer& tok = *served.tokenizer;
  if (q.prompt_ids.empty() && !q.prompt_text.empty()) {
    q.prompt_ids = tok.encode(q.prompt_text, q.add_bos.value_or(tok.add_bos_default()));
    q.prompt_ids_from_text = true;
  }
  return std::nullopt;
}

std::function<bool()> Daemon::still_connected(const ClientRef& from, bool detached) {
  // A Unix-socket connection that closed gets nothing started, unless the request outlives it;
  // ZeroMQ peers have no connection to lose.
  return [this, from, detached] {
    return detached || from.transport != Transport::kUds || (uds_ && uds_->find(from.conn_id) != nullptr);
  };
}

}  // namespace vks::server
