// Daemon ↔ HttpFrontend: the --http listeners and the socket-activated "http" descriptor, and the
// submit path of HTTP generations (the same registry, ids, PUB topics and limits as every other
// transport; answers are rendered by the front end from the engine events).
#include <spdlog/spdlog.h>

#include <atomic>
#include <span>

#include "engine/chat/jinja_budget.h"
#include "protocol/stats.h"
#include "protocol/topic.h"
#include "server/chat_render.h"
#include "server/chat_tool_calls.h"
#include "server/daemon.h"

namespace vks::server {

void Daemon::setup_http(const ListenFds& fds) {
  if (options_.http_endpoints.empty() && !fds.http && fds.http_handed.empty()) return;
  HttpFrontendOptions ho;
  ho.endpoints = options_.http_endpoints;
  ho.api_key = options_.api_key;
  ho.cors_origins = options_.http_cors;
  ho.unix_mode = options_.socket_mode;
  ho.limits.max_connections = options_.http_max_connections;
  ho.limits.max_output_bytes = limits_.max_output_bytes;
  // A JSON body carries the prompt with some escaping: twice the frame limit.
  ho.limits.max_body_bytes = 2ull * limits_.max_frame_bytes;
  ho.wire_limits = limits_;

  HttpFrontend::Backend backend;
  backend.submit = [this](uint64_t conn_id, proto::GenerateRequest m, std::function<bool()> still_wanted,
                          std::function<void(HttpSubmitOutcome)> done) {
    submit_http(conn_id, m, std::move(still_wanted), std::move(done));
  };
  backend.submit_chat = [this](uint64_t conn_id, proto::ChatRequest m, std::shared_ptr<const RenderedChat> rendered,
                               std::function<bool()> still_wanted, std::function<void(HttpSubmitOutcome)> done) {
    submit_http_chat(conn_id, std::move(m), std::move(rendered), std::move(still_wanted), std::move(done));
  };
  backend.submit_embed = [this](uint64_t conn_id, proto::EmbedRequest m, std::function<bool()> still_wanted,
                                std::function<void(HttpSubmitOutcome)> done) {
    submit_http_embed(conn_id, std::move(m), std::move(still_wanted), std::move(done));
  };
  backend.with_model = [this](uint64_t conn_id, const std::string& model_id, HttpFrontend::Backend::ModelWork work,
                              bool client_template, std::function<bool()> still_wanted,
                              std::function<void(nlohmann::json, std::exception_ptr)> done) {
    touch();
    // The front end resolved (loaded) the model already; with_model loads it again only if it was
    // evicted meanwhile.
    with_model(model_id, std::nullopt, {},
               [this, conn_id, work = std::move(work), client_template, still_wanted = std::move(still_wanted),
                done = std::move(done)](ModelSlot* model, const proto::ProtocolError* error) mutable {
                 if (!handles_open_ || !still_wanted()) return;
                 if (error != nullptr) {
                   return done(nullptr, std::make_exception_ptr(vks::Error(ErrorCode::kOverloaded, error->message)));
                 }
                 run_model_work(conn_id, *model, std::move(work), client_template, std::move(still_wanted), std::move(done));
               });
  };
  backend.connection_closed = [this](uint64_t conn_id) {
    touch();
    ClientRef owner;
    owner.transport = Transport::kHttp;
    owner.conn_id = conn_id;
    off_loop_.forget(owner_key(owner));  // a render still running for it stops
    drop_owner(owner, "HTTP client disconnected");
  };
  backend.metrics = [this] { return metrics_text(); };
  backend.serving = [this] { return phase_ == Phase::kServing; };
  PeerPolicy policy{options_.allow_uids, options_.allow_gids, options_.deny_uids};
  backend.allow_unix_peer = [policy](const http::PeerInfo& peer, std::string& why) {
    if (policy.allows(peer.cred)) return true;
    why = "uid " + std::to_string(peer.cred.uid) + " is not allowed on this socket (--allow-uid/--allow-gid)";
    return false;
  };
  // The text a token contributes inside a sequence (its leading space kept, unlike a lone decode):
  // the tokenizer's own piece bytes (SentencePiece and byte-level BPE alike); a control token,
  // which contributes no text, is shown by its vocabulary string.
  backend.token_text = [this](const std::string& model_id, TokenId id) {  // per token: an exact name, no matching
    ModelSlot* model = models_.named(model_id);
    if (model == nullptr || !model->loaded()) return std::string();
    const Tokenizer& tok = *model->served->tokenizer;
    if (id < 0 || id >= tok.vocab_size()) return std::string();
    std::string piece = tok.token_bytes(id);
    if (piece.empty()) piece = std::string(tok.token_text(id));
    return piece;
  };
  auto status_of = [this](const ModelSlot& slot, std::chrono::steady_clock::time_point now) {
    HttpModelStatus m;
    m.entry = catalogue_entry(slot);
    m.loaded = slot.loaded();
    m.resident_bytes = slot.loaded() ? slot.resident_bytes : 0;
    if (const auto at = slot.loaded() ? slot.expires_at() : std::nullopt) {
      m.expires_in_ms = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(*at - now).count());
    }
    return m;
  };
  backend.models = [this, status_of] {
    std::vector<HttpModelStatus> out;
    const auto now = std::chrono::steady_clock::now();
    for (const auto& slot : models_.slots()) out.push_back(status_of(*slot, now));
    return out;
  };
  backend.find_model = [this, status_of](const std::string& name, HttpModelStatus& found, proto::ProtocolError& error) {
    const ModelSlot* slot = find_model(name);
    if (slot == nullptr) {
      error = model_not_found(name);
      return false;
    }
    found = status_of(*slot, std::chrono::steady_clock::now());
    return true;
  };
  backend.resolve_model = [this](const std::string& name, std::optional<double> keep_alive,
                                 std::function<bool()> still_wanted, HttpFrontend::Backend::ResolvedModel done) {
    touch();
    with_model(name, keep_alive, {},
               [this, still_wanted = std::move(still_wanted), done = std::move(done)](ModelSlot* model,
                                                                                      const proto::ProtocolError* error) {
                 if (!handles_open_ || !still_wanted()) return;
                 if (error != nullptr) return done(nullptr, *error);
                 done(std::make_shared<const http::ModelCatalogue>(catalogue_entry(*model)), proto::ProtocolError{});
               });
  };
  backend.unload = [this](const std::string& name) {
    ModelSlot* model = models_.find(name);
    if (model == nullptr || !model->loaded() || model->pinned) return false;
    model->unload_requested = true;
    unload_expired_models();
    return true;
  };
  setup_http_pull(backend);
  http_ = std::make_unique<HttpFrontend>(&loop_, std::move(ho), std::move(backend));
  http_->start(fds.http, fds.http_handed);
  for (const std::string& a : http_->addresses()) spdlog::info("HTTP API on {}", a);
}

void Daemon::run_model_work(uint64_t conn_id, ModelSlot& model, HttpFrontend::Backend::ModelWork work,
                            bool client_template, std::function<bool()> still_wanted,
                            std::function<void(nlohmann::json, std::exception_ptr)> done) {
  ClientRef from;
  from.transport = Transport::kHttp;
  from.conn_id = conn_id;
  auto answer = std::make_shared<nlohmann::json>();
  std::shared_ptr<ServedModel> served = model.served;  // kept loaded while the work runs
  // Rendering and tokenizing are not bounded by anything cheap: off the loop, like a chat's (and,
  // for a template the client sent, on part of the pool only, stopped when the client leaves).
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  off_loop_.run(
      &loop_, owner_key(from),
      [answer, work = std::move(work), served, cancel] {
        jinja::RenderScope renders(kRequestRenderTime, cancel.get());
        *answer = work(*served->chat_template, *served->tokenizer);
      },
      [this, answer, still_wanted = std::move(still_wanted), done = std::move(done)](std::exception_ptr error) {
        if (!handles_open_ || !still_wanted()) return;  // shut down, or the client left
        done(std::move(*answer), error);
      },
      cancel, client_template ? OffLoop::Cost::kClientChosen : OffLoop::Cost::kBounded);
}

http::ModelCatalogue Daemon::catalogue_entry(const ModelSlot& slot) const {
  proto::ModelInfo info = slot.loaded() ? slot.info : slot.header.value_or(proto::ModelInfo{});
  if (!slot.loaded() && info.name.empty()) info.name = slot.file.name;
  const std::string quantization = slot.loaded() ? slot.served->config.quantization : slot.header_quantization;
  http::ModelCatalogue entry = make_model_catalogue(slot.file, info, quantization);
  const chat::ModelChatTemplate* tmpl = slot.loaded() ? slot.served->chat_template.get() : slot.header_template.get();
  if (tmpl != nullptr) {
    entry.tool_format = tmpl->tool_format;
    entry.reasoning = tmpl->reasoning;
  }
  if (slot.loaded()) entry.tied_embeddings = slot.served->config.tied_embeddings;
  return entry;
}

namespace {

HttpSubmitOutcome failed(proto::ProtocolError error, const std::string& id) {
  HttpSubmitOutcome out;
  out.error = std::move(error);
  out.id = id;
  return out;
}

}  // namespace

void Daemon::submit_http(uint64_t conn_id, const proto::GenerateRequest& message, std::function<bool()> still_wanted,
                         std::function<void(HttpSubmitOutcome)> done) {
  auto job = std::make_shared<GenerateJob>(to_generate_job(message));
  with_model(message.model, message.keep_alive, {},
             [this, conn_id, job, still_wanted, done](ModelSlot* model, const proto::ProtocolError* error) mutable {
               if (!handles_open_ || !still_wanted()) return;  // the client went away: nothing started
               if (error != nullptr) return done(failed(*error, job->request.id));
               // A long prompt is tokenized, and a grammar or schema compiled, on libuv's pool.
               if (!needs_preparation(job->request)) return done(submit_http_now(conn_id, *model, *job));
               submit_http_prepared(conn_id, *model, job, &Daemon::tokenize_prompt, OffLoop::Cost::kBounded,
                                    std::move(still_wanted), std::move(done));
             });
}

void Daemon::submit_http_chat(uint64_t conn_id, proto::ChatRequest message, std::shared_ptr<const RenderedChat> rendered,
                              std::function<bool()> still_wanted, std::function<void(HttpSubmitOutcome)> done) {
  touch();
  // Rendered and tokenized off the loop, exactly as the msgpack `chat` request (chat_render.h).
  auto chat = std::make_shared<const proto::ChatRequest>(std::move(message));
  const auto arrived = std::chrono::steady_clock::now();  // a model load it waits for counts from here
  with_model(chat->generate.model, chat->generate.keep_alive, {},
             [this, conn_id, chat, rendered = std::move(rendered), arrived, still_wanted,
              done](ModelSlot* model, const proto::ProtocolError* error) mutable {
               if (!handles_open_ || !still_wanted()) return;
               if (error != nullptr) return done(failed(*error, chat->generate.id));
               auto job = std::make_shared<GenerateJob>(to_generate_job(chat->generate, arrived));
               if (rendered) return done(submit_http_rendered(conn_id, *model, *chat, std::move(rendered), *job));
               // The same preparation as the msgpack chat's: with tools, its calls are tool_call events too.
               ++chat_renders_;
               auto own_template = std::make_shared<std::shared_ptr<const chat::ModelChatTemplate>>();
               auto kept = std::make_shared<RenderedChat>();
               Preparation render = chat_preparation(chat, job, own_template);
               // A template the client sent costs what the client chooses: it may hold only part of the pool.
               const OffLoop::Cost cost = chat->chat_template ? OffLoop::Cost::kClientChosen : OffLoop::Cost::kBounded;
               submit_http_prepared(
                   conn_id, *model, std::move(job), std::move(render), cost, std::move(still_wanted),
                   [own_template, kept, done = std::move(done)](HttpSubmitOutcome outcome) {
                     outcome.request_template = *own_template;
                     kept->own_template = std::move(*own_template);
                     if (outcome.ok) outcome.rendered = kept;
                     done(std::move(outcome));
                   },
                   [kept](const GenerateJob& prepared) { kept->keep(prepared.request); });
             });
}

HttpSubmitOutcome Daemon::submit_http_rendered(uint64_t conn_id, ModelSlot& model, const proto::ChatRequest& chat,
                                               std::shared_ptr<const RenderedChat> rendered, GenerateJob& job) {
  rendered->give(job.request);  // prepared already: admitted at once, on the loop
  const chat::ModelChatTemplate& tmpl = rendered->own_template ? *rendered->own_template : *model.served->chat_template;
  if (chat.has_tools()) job.tool_calls = std::make_shared<ChatToolCalls>(tmpl, chat.enable_thinking);
  HttpSubmitOutcome out = submit_http_now(conn_id, model, job);
  out.request_template = rendered->own_template;
  out.rendered = std::move(rendered);
  return out;
}

void Daemon::submit_http_prepared(uint64_t conn_id, ModelSlot& model, std::shared_ptr<GenerateJob> job,
                                  Preparation prepare, OffLoop::Cost cost, std::function<bool()> still_wanted,
                                  std::function<void(HttpSubmitOutcome)> done,
                                  std::function<void(const GenerateJob&)> on_prepared) {
  ClientRef from;
  from.transport = Transport::kHttp;
  from.conn_id = conn_id;
  // An HTTP request's answer goes to its connection: its preparation stops when that closes.
  prepare_off_loop(from, model, std::move(job), std::move(prepare), cost, /*stop_with_client=*/true, std::move(still_wanted),
                   [this, conn_id, done = std::move(done), on_prepared = std::move(on_prepared)](
                       ModelSlot& m, GenerateJob& prepared, const proto::ProtocolError* error) {
                     if (error != nullptr) return done(failed(*error, prepared.request.id));
                     if (on_prepared) on_prepared(prepared);
                     done(submit_http_now(conn_id, m, prepared));
                   });
}

void Daemon::submit_http_embed(uint64_t conn_id, proto::EmbedRequest message, std::function<bool()> still_wanted,
                               std::function<void(HttpSubmitOutcome)> done) {
  touch();
  auto wire = std::make_shared<proto::EmbedRequest>(std::move(message));
  with_model(wire->model, wire->keep_alive, {},
             [this, conn_id, wire, still_wanted, done](ModelSlot* model, const proto::ProtocolError* error) mutable {
               if (!handles_open_ || !still_wanted()) return;
               if (error != nullptr) return done(failed(*error, wire->id));
               submit_http_embed_to(conn_id, *model, *wire, std::move(still_wanted), std::move(done));
             });
}

void Daemon::submit_http_embed_to(uint64_t conn_id, ModelSlot& model, const proto::EmbedRequest& message,
                                  std::function<bool()> still_wanted, std::function<void(HttpSubmitOutcome)> done) {
  ClientRef from;
  from.transport = Transport::kHttp;
  from.conn_id = conn_id;
  if (std::optional<Admission> refused = admission_check(from, message.id)) {  // before tokenizing
    return done(failed(refused->error, refused->error_id));
  }
  auto request = std::make_shared<EmbedRequest>(to_engine_embed(message));
  // Admitted like a msgpack embed (admission.cpp), whose events come back to the front end.
  prepare_embed(from, model, request, std::move(still_wanted),
                [this, from, done = std::move(done)](ModelSlot& m, EmbedRequest& prepared, const proto::ProtocolError* error) {
                  if (error != nullptr) return done(failed(*error, prepared.id));
                  const Admission a = admit_embed(from, proto::Tag::none(), m, prepared);
                  HttpSubmitOutcome out = failed(a.error, a.error_id);
                  out.ok = a.ok;
                  if (a.ok) out.id = a.id;
                  out.prompt_tokens = a.prompt_tokens;
                  out.retry_after_ms = a.retry_after_ms;
                  done(out);
                });
}

HttpSubmitOutcome Daemon::submit_http_now(uint64_t conn_id, ModelSlot& model, GenerateJob& r) {
  ClientRef from;
  from.transport = Transport::kHttp;
  from.conn_id = conn_id;
  const Admission a = admit_generate(from, model, r);
  HttpSubmitOutcome out;
  out.ok = a.ok;
  out.id = a.ok ? a.id : a.error_id;
  out.prompt_tokens = a.prompt_tokens;
  out.error = a.error;
  out.retry_after_ms = a.retry_after_ms;
  return out;
}

// Ollama's /api/pull and /api/delete: the same pull_model / delete_model as the msgpack requests.
void Daemon::setup_http_pull(HttpFrontend::Backend& backend) {
  backend.pull = [this](const std::string& name, std::function<void(const http::PullProgress&)> progress,
                        HttpFrontend::Backend::PullDone done) {
    pull_model(
        name,
        [progress = std::move(progress)](const ModelPuller::Progress& p) {
          progress(http::PullProgress{p.digest, p.file, p.completed, p.total});
        },
        [done = std::move(done)](const proto::PulledAnswer* pulled, const proto::ProtocolError* error) {
          done(pulled != nullptr ? pulled->model : std::string(), error);
        });
  };
  backend.remove = [this](const std::string& name, std::function<void(const proto::ProtocolError*)> done) {
    delete_model(name, std::move(done));
  };
}

}  // namespace vks::server
