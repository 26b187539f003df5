// Daemon: `embed` requests (docs/PROTOCOL.md 3.11). The texts are tokenized off the socket loop
// when they are long (OffLoop, like generate prompts), the inputs go to Engine::submit_embed, and
// the one answer (`embed` with every vector, or an error) goes back when the engine's kFinished
// for the request arrives. Embed requests have no stream: they are not in the StreamRegistry.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <memory>

#include "protocol/embed_wire.h"
#include "server/daemon.h"

namespace vks::server {
namespace {

size_t text_bytes(const EmbedRequest& r) {
  size_t n = 0;
  for (const std::string& t : r.texts) n += t.size();
  return n;
}

}  // namespace

void tokenize_embed_inputs(EmbedRequest& request, const Tokenizer& tokenizer) {
  request.token_inputs.reserve(request.texts.size());
  const bool add_bos = request.add_bos.value_or(tokenizer.add_bos_default());
  for (const std::string& text : request.texts) request.token_inputs.push_back(tokenizer.encode(text, add_bos));
  request.texts.clear();
  request.inputs_from_text = true;
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, proto::EmbedRequest& r) {
  auto request = std::make_shared<proto::EmbedRequest>(std::move(r));
  with_model_for(from, tag, request->model, request->keep_alive,
                 [this, from, tag, request](ModelSlot& model) { embed(from, tag, model, *request); });
}

void Daemon::embed(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, const proto::EmbedRequest& r) {
  const std::string key = owner_key(from);
  if (std::optional<Admission> refused = admission_check(from, r.id)) {
    reply(from, proto::encode_error(refused->error, tag, refused->error_id, refused->retry_after_ms));
    return;
  }
  // The answer must fit one frame.
  const size_t n_inputs = r.tokens.empty() ? r.input.size() : r.tokens.size();
  const size_t dim = static_cast<size_t>(std::max(1, model.info.dim));
  if (proto::detail::embed_answer_bytes(n_inputs, dim) > limits_.max_frame_bytes) {
    size_t fit = 1;
    while (proto::detail::embed_answer_bytes(fit + 1, dim) <= limits_.max_frame_bytes) ++fit;
    ++requests_rejected_;
    reply_error(from, tag, proto::WireError::kInvalidField,
                std::to_string(n_inputs) + " vectors of " + std::to_string(dim) + " floats exceed max_frame_bytes (" +
                    std::to_string(limits_.max_frame_bytes) + "); send at most " + std::to_string(fit) +
                    " inputs per request",
                r.tokens.empty() ? "input" : "tokens", r.id);
    return;
  }
  auto request = std::make_shared<EmbedRequest>(to_engine_embed(r));
  if (text_bytes(*request) < kOffLoopMinTextBytes) {
    submit_embed(from, tag, model, *request);
    return;
  }
  std::shared_ptr<ServedModel> served = model.served;  // kept loaded while the work runs
  ModelSlot* slot = &model;  // stays: a model is never unloaded while its ServedModel is held
  off_loop_.run(
      &loop_, key,
      [served, request] { tokenize_embed_inputs(*request, *served->tokenizer); },
      [this, from, tag, request, served, slot](std::exception_ptr error) {
        if (!handles_open_) return;  // shut down meanwhile: every socket is closed
        if (error) {
          ++requests_rejected_;
          reply_error(from, tag, proto::WireError::kInternal, "tokenizing the inputs failed: " + what_of(error), "input",
                      request->id);
          return;
        }
        if (from.transport == Transport::kUds && uds_ && uds_->find(from.conn_id) == nullptr) {
          spdlog::info("{}: closed while its embed inputs were tokenized; request dropped", from.describe());
          return;
        }
        submit_embed(from, tag, *slot, *request);
      });
}

void Daemon::submit_embed(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, EmbedRequest& request) {
  const Admission a = admit_embed(from, tag, model, request);
  // Accepted: answered with the vectors when the engine finishes it (handle_embed_event).
  if (!a.ok) reply(from, proto::encode_error(a.error, tag, a.error_id, a.retry_after_ms));
}

bool Daemon::handle_embed_event(const EngineEvent& ev) {
  const auto it = pending_embeds_.find(ev.request_id);
  if (it == pending_embeds_.end()) return false;
  PendingEmbed& p = it->second;
  if (p.owner.transport == Transport::kHttp) {  // the HTTP front end renders its own answer
    if (http_) http_->on_engine_event(ev);
    if (ev.type == EventType::kFinished) pending_embeds_.erase(it);
    return true;
  }
  if (ev.type == EventType::kError) {
    p.error = ev;
    return true;
  }
  if (ev.type != EventType::kFinished) return true;
  if (ev.reason == FinishReason::kStop) {
    reply(p.owner, proto::encode_answer(embed_answer_from_engine(ev), p.tag));
  } else {
    reply(p.owner, proto::encode_error(embed_failure(ev.reason, p.error ? &*p.error : nullptr), p.tag, ev.request_id));
  }
  pending_embeds_.erase(it);
  return true;
}

void Daemon::cancel_embeds_of(const std::string& key) {
  for (const auto& [id, p] : pending_embeds_) {
    if (p.owner_key != key) continue;
    if (ModelSlot* model = slot_of_request(id)) model->served->engine->cancel(id);
  }
}

}  // namespace vks::server
