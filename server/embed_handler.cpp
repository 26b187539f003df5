// Daemon: `embed` requests (docs/PROTOCOL.md 3.11). The texts are tokenized off the socket loop
// when they are long (prepare_embed, preparation.cpp), the inputs go to Engine::submit_embed, and
// the one answer (`embed` with every vector, or an error) goes back when the engine's kFinished
// for the request arrives. Embed requests have no stream: they are not in the StreamRegistry.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <memory>

#include "protocol/embed_wire.h"
#include "server/daemon.h"

namespace vks::server {

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
  prepare_embed(from, model, request, still_connected(from, /*detached=*/false),
                [this, from, tag](ModelSlot& m, EmbedRequest& prepared, const proto::ProtocolError* error) {
                  if (error != nullptr) return reply(from, proto::encode_error(*error, tag, prepared.id));
                  submit_embed(from, tag, m, prepared);
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
  if (ev.type == EventType::kError) {
    p.error = ev;
    return true;
  }
  if (ev.type != EventType::kFinished) return true;
  if (p.owner.transport == Transport::kHttp) {  // the HTTP front end renders the same answer or error
    if (http_ && ev.reason == FinishReason::kStop) {
      http_->on_embed_result(ev.request_id, embed_answer_from_engine(ev));
    } else if (http_) {
      http_->on_embed_result(ev.request_id, embed_failure(ev.reason, p.error ? &*p.error : nullptr));
    }
    pending_embeds_.erase(it);
    return true;
  }
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
