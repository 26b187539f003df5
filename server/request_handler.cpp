// Daemon: one handler per request type. Every request arrives on the loop thread from the Unix
// socket or the ZeroMQ ROUTER; the answer goes back to the same client (ClientRef).
#include <spdlog/spdlog.h>

#include <exception>
#include <span>
#include <variant>

#include "protocol/topic.h"
#include "protocol/version.h"
#include "server/daemon.h"
#include "server/engine_translation.h"

namespace vks::server {

void Daemon::reply(const ClientRef& to, const std::string& payload) {
  switch (to.transport) {
    case Transport::kUds:
      if (Connection* c = uds_->find(to.conn_id)) c->send(payload);
      break;
    case Transport::kZmq:
      if (router_) router_->send(to, payload);
      break;
    case Transport::kHttp:  // HTTP answers come from HttpFrontend, never as msgpack
    case Transport::kNone:
      break;
  }
}

void Daemon::reply_error(const ClientRef& to, const proto::Tag& tag, proto::WireError code,
                         const std::string& message, const std::string& field, const std::string& id) {
  reply(to, proto::encode_error(proto::make_error(code, message, field), tag, id));
}

void Daemon::handle_request(const ClientRef& from, std::string& payload) {
  touch();
  if (defer_if_busy(from, payload)) return;  // keeps this client's answers in order
  try {
    proto::Result<proto::Request> parsed = proto::parse_request(payload, limits_);
    if (!parsed) {
      spdlog::info("{}: rejected request: {} ({})", from.describe(),
                   proto::wire_error_name(parsed.error().code), parsed.error().message);
      reply(from, proto::encode_error(parsed.error(), proto::peek_tag(payload)));
      return;
    }
    proto::Request& request = *parsed;
    spdlog::debug("{}: {}", from.describe(), proto::request_type_name(request.body));
    std::visit([&](auto& body) { handle(from, request.tag, body); }, request.body);
  } catch (const std::exception& e) {
    spdlog::error("{}: request failed: {}", from.describe(), e.what());
    reply_error(from, proto::peek_tag(payload), proto::WireError::kInternal, e.what());
  } catch (...) {
    spdlog::error("{}: request failed with an unknown exception", from.describe());
    reply_error(from, proto::Tag::none(), proto::WireError::kInternal, "unknown failure");
  }
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::HelloRequest& r) {
  if (r.version < proto::kMinProtocolVersion) {
    reply_error(from, tag, proto::WireError::kUnsupportedVersion,
                "client protocol version " + std::to_string(r.version) + " is older than " +
                    std::to_string(proto::kMinProtocolVersion) + ", the oldest this server speaks",
                "version");
    return;
  }
  spdlog::info("{}: hello (client '{}', version {})", from.describe(), r.client, r.version);
  proto::HelloAnswer a;
  a.version = proto::PROTOCOL_VERSION;
  a.server = "vkstreamd 0.1.0";
  if (ModelSlot* def = models_.find("")) {
    a.model = def->loaded() ? def->info : proto::ModelInfo{};
    if (!def->loaded()) a.model.name = def->file.name;
  }
  a.limits = limits_;
  a.pub_endpoint = pub_ ? pub_->endpoint() : "";
  a.router_endpoint = router_ ? router_->endpoint() : "";
  a.retention_ms = registry_.retention().count();
  reply(from, proto::encode_answer(a, tag));
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, proto::GenerateRequest& r) {
  auto job = std::make_shared<GenerateJob>(to_generate_job(r));
  with_model_for(from, tag, r.model, r.keep_alive, [this, from, tag, job](ModelSlot& model) {
    submit_generate(from, tag, model, *job);
  });
}

void Daemon::submit_generate(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, GenerateJob& r) {
  // Checked before any off-loop work too, so that a refused request costs nothing.
  if (std::optional<Admission> refused = admission_check(from, r.request.id)) {
    reply(from, proto::encode_error(refused->error, tag, refused->error_id, refused->retry_after_ms));
    return;
  }
  if (needs_preparation(r.request)) {  // long prompt_text / grammar: prepared off the loop first
    auto job = std::make_shared<GenerateJob>(std::move(r));
    // A detached request outlives its connection: nothing stops its preparation.
    prepare_off_loop(from, model, job, &Daemon::tokenize_prompt, OffLoop::Cost::kBounded, !job->detached,
                     still_connected(from, job->detached),
                     [this, from, tag](ModelSlot& m, GenerateJob& prepared, const proto::ProtocolError* error) {
                       if (error != nullptr) return reply(from, proto::encode_error(*error, tag, prepared.request.id));
                       submit_generate(from, tag, m, prepared);  // prepared now: admitted at once
                     });
    return;
  }
  const Admission a = admit_generate(from, model, r);
  if (!a.ok) {
    reply(from, proto::encode_error(a.error, tag, a.error_id, a.retry_after_ms));
    return;
  }
  proto::AcceptedAnswer accepted;
  accepted.id = a.id;
  accepted.topic = a.topic;
  accepted.queue_position = a.queue_position;
  accepted.prompt_tokens = a.prompt_tokens;
  accepted.detached = r.detached;
  accepted.model = model.file.name;
  reply(from, proto::encode_answer(accepted, tag));
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::CancelRequest& r) {
  if (std::optional<std::string> answer = cancel_known(from, tag, r)) {
    reply(from, *answer);
    return;
  }
  const StreamEntry* e = registry_.find(r.id);
  reply_error(from, tag, proto::WireError::kNotFound,
              e == nullptr ? "no request with id '" + r.id + "' (unknown or expired)"
                           : "request '" + r.id + "' already finished",
              "id", r.id);
}

std::optional<std::string> Daemon::cancel_known(const ClientRef& from, const proto::Tag& tag,
                                                const proto::CancelRequest& r) {
  if (pending_embeds_.count(r.id)) {  // an embed request (no stream entry): answered by its error
    spdlog::info("{}: cancel embed {}", from.describe(), r.id);
    if (ModelSlot* model = slot_of_request(r.id)) model->served->engine->cancel(r.id);
    return proto::encode_answer(proto::CancelledAnswer{r.id}, tag);
  }
  if (preparing_.cancel(r.id)) {  // not admitted yet: it ends cancelled when its preparation stops
    spdlog::info("{}: cancel {} (while it is prepared)", from.describe(), r.id);
    return proto::encode_answer(proto::CancelledAnswer{r.id}, tag);
  }
  const StreamEntry* e = registry_.find(r.id);
  if (e == nullptr || e->state == proto::RequestState::kFinished) return std::nullopt;
  spdlog::info("{}: cancel {}", from.describe(), r.id);
  if (ModelSlot* model = slot_of_request(r.id)) model->served->engine->cancel(r.id);
  return proto::encode_answer(proto::CancelledAnswer{r.id}, tag);
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::StatusRequest& r) {
  const StreamEntry* e = registry_.find(r.id);
  if (e == nullptr) {
    reply_error(from, tag, proto::WireError::kNotFound, "no request with id '" + r.id + "' (unknown or expired)",
                "id", r.id);
    return;
  }
  proto::StatusAnswer a;
  a.id = e->id;
  a.state = e->state;
  a.topic = e->topic;
  a.last_seq = static_cast<int64_t>(e->events.size()) - 1;
  a.queue_position = e->state == proto::RequestState::kQueued ? e->queue_position : -1;
  a.prompt_tokens = e->prompt_tokens;
  a.generated_tokens = e->generated_tokens;
  a.detached = e->detached;
  a.reason = e->reason;
  reply(from, proto::encode_answer(a, tag));
}

proto::StatsSnapshot Daemon::stats_snapshot() const {
  proto::ServerStats s;
  s.connections = uds_ ? static_cast<int32_t>(uds_->connection_count()) : 0;
  s.subscriptions = pub_ ? pub_->subscriptions() : 0;
  s.retained_requests = registry_.retained_count();
  s.requests_total = requests_total_;
  s.requests_rejected = requests_rejected_;
  s.uptime_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  // The default model's engine, else the first loaded one (per-model figures: the `models` answer).
  const ModelSlot* shown = const_cast<ModelSet&>(models_).find("");
  if (shown == nullptr || !shown->loaded()) {
    const std::vector<ModelSlot*> loaded = models_.loaded();
    shown = loaded.empty() ? nullptr : loaded.front();
  }
  const EngineStats es = shown != nullptr && shown->loaded() ? shown->served->engine->stats() : EngineStats{};
  proto::StatsSnapshot snapshot = make_stats_snapshot(es, s);
  itl_.fill(snapshot.itl_ms);  // cumulative since start (the engine's samples are a recent window)
  return snapshot;
}

std::string Daemon::metrics_text() const {
  std::vector<proto::ModelMetrics> models;
  for (const auto& slot : models_.slots()) {
    proto::ModelMetrics m;
    m.name = slot->file.name;
    m.loaded = slot->loaded();
    m.load_seconds = slot->load_ms / 1000.0;
    slot->itl.fill(m.itl_ms);
    if (slot->loaded()) {
      const EngineStats es = slot->served->engine->stats();
      m.waiting = es.waiting;
      m.running = es.running;
      m.kv_blocks_total = es.kv_blocks_total;
      m.kv_blocks_used = es.kv_blocks_used;
      m.requests_finished = es.requests_finished;
      m.tokens_generated = es.tokens_generated;
      m.resident_bytes = slot->resident_bytes;
      m.ttft_ms = proto::make_histogram(es.ttft_ms_samples);
    }
    models.push_back(std::move(m));
  }
  // Chat renders (every transport; an n > 1 answer renders once): server-side, no wire stat.
  const std::string renders = "# HELP vkstream_chat_renders_total Chat conversations rendered with a chat template and tokenized.\n"
                              "# TYPE vkstream_chat_renders_total counter\nvkstream_chat_renders_total " +
                              std::to_string(chat_renders_) + "\n";
  return proto::render_prometheus(stats_snapshot()) + proto::render_model_metrics(models) + renders;
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::StatsRequest& r) {
  proto::StatsAnswer a;
  a.format = r.format;
  a.stats = stats_snapshot();
  if (r.format == proto::StatsFormat::kPrometheus) a.text = metrics_text();
  reply(from, proto::encode_answer(a, tag));
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::TokenizeRequest& r) {
  with_model_for(from, tag, r.model, std::nullopt, [this, from, tag, r](ModelSlot& model) {
    if (tokenize_off_loop(from, tag, model, r)) return;
    const Tokenizer& tok = *model.served->tokenizer;
    proto::TokenizeAnswer a;
    a.ids = tok.encode(r.text, r.add_bos.value_or(tok.add_bos_default()), r.parse_special);
    reply(from, proto::encode_answer(a, tag));
  });
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::DetokenizeRequest& r) {
  with_model_for(from, tag, r.model, std::nullopt, [this, from, tag, r](ModelSlot& model) { detokenize(from, tag, model, r); });
}

void Daemon::detokenize(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, const proto::DetokenizeRequest& r) {
  const Tokenizer& tok = *model.served->tokenizer;
  const int32_t vocab = tok.vocab_size();
  for (size_t i = 0; i < r.ids.size(); ++i) {
    if (r.ids[i] < 0 || r.ids[i] >= vocab) {
      reply_error(from, tag, proto::WireError::kInvalidField,
                  "token id " + std::to_string(r.ids[i]) + " is outside the vocabulary (0.." +
                      std::to_string(vocab - 1) + ")",
                  "ids." + std::to_string(i));
      return;
    }
  }
  if (detokenize_off_loop(from, tag, model, r)) return;
  proto::DetokenizeAnswer a;
  a.text = tok.decode(r.ids);
  reply(from, proto::encode_answer(a, tag));
}

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, const proto::ReplayRequest& r) {
  const StreamEntry* e = registry_.find(r.id);
  if (e == nullptr) {
    reply_error(from, tag, proto::WireError::kNotFound, "no request with id '" + r.id + "' (unknown or expired)",
                "id", r.id);
    return;
  }
  const size_t total = e->events.size();
  const size_t from_seq = static_cast<size_t>(std::clamp<int64_t>(r.from_seq, 0, static_cast<int64_t>(total)));
  const std::span<const std::string> events(e->events.data() + from_seq, total - from_seq);
  // One answer never exceeds the frame limit (it holds in both directions); the client asks
  // again from next_seq.
  const size_t max_bytes = limits_.max_frame_bytes;
  reply(from, proto::encode_replay_raw(e->id, events, static_cast<int64_t>(from_seq),
                                       e->state == proto::RequestState::kFinished, tag, max_bytes));
}

}  // namespace vks::server
