#include "server/http_frontend.h"


#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>

#include "engine/common/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/http/anthropic_messages.h"
#include "server/http/answer_parse.h"
#include "server/http/cors.h"
#include "server/http/openai_responses.h"
#include "server/http/json_body.h"
#include "server/http/json_error.h"
#include "server/http/json_text.h"
#include "server/http/ollama_api.h"
#include "server/http/ollama_chat.h"
#include "server/http/openai_api.h"
#include "server/http/openai_chat.h"
#include "server/http/token_api.h"
#include "server/chat_render.h"

namespace vks::server {

using nlohmann::json;
using http::ApiError;
using http::HttpConnection;
using http::HttpRequest;

namespace {

bool is_ollama_path(const std::string& path) { return path.rfind("/api/", 0) == 0; }

// A client-chosen id from an x-request-id header, when it is a valid wire id.
bool valid_client_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char ch : id) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                    ch == '_' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

// Constant-time comparison: the key must not leak through timing.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

}  // namespace

http::ModelCatalogue make_model_catalogue(const store::CatalogModel& file, const proto::ModelInfo& info,
                                          const std::string& file_type) {
  http::ModelCatalogue m;
  m.info = info;
  m.id = file.name;
  m.file_type = file_type;
  m.file_bytes = file.size_bytes;  // as the catalogue read them: no second stat per listing
  m.created_unix = file.mtime_unix;
  // Not a content hash (that would read the whole file at startup): stable for one file version.
  const uint64_t h = std::hash<std::string>{}(m.id + "/" + std::to_string(m.file_bytes) + "/" + std::to_string(m.created_unix));
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  m.digest = std::string(hex) + std::string(hex) + std::string(hex) + std::string(hex);
  return m;
}

HttpFrontend::HttpFrontend(uv_loop_t* loop, HttpFrontendOptions options, Backend backend)
    : options_(std::move(options)), backend_(std::move(backend)) {
  http::HttpServer::Hooks hooks;
  hooks.on_request = [this](HttpConnection& c, HttpRequest& r) { handle(c, r); };
  hooks.on_closed = [this](HttpConnection& c) { on_closed(c); };
  hooks.allow_peer = [this](const http::PeerInfo& peer, std::string& why) {
    if (!peer.is_unix || !backend_.allow_unix_peer) return true;
    return backend_.allow_unix_peer(peer, why);
  };
  server_ = std::make_unique<http::HttpServer>(loop, options_.limits, std::move(hooks));
}

HttpFrontend::~HttpFrontend() = default;

void HttpFrontend::start(std::optional<int> activated_fd, std::vector<http::HandedListener> handed) {
  std::vector<http::HttpEndpoint> endpoints;
  for (const std::string& spec : options_.endpoints) endpoints.push_back(http::parse_http_endpoint(spec));
  for (const http::HttpEndpoint& e : endpoints) http::require_api_key_off_loopback(e, options_.api_key);
  if (!handed.empty()) {  // the --http endpoints (and activated socket), bound before the model load
    for (http::HandedListener& h : handed) server_->adopt(h.fd, std::move(h.unlink_path));
    return;
  }
  for (const http::HttpEndpoint& e : endpoints) server_->listen(e, options_.unix_mode);
  if (activated_fd) server_->adopt(*activated_fd);
}

std::string HttpFrontend::fresh_request_id() {
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(rng_()),
                static_cast<unsigned long long>(rng_()));
  return hex;
}

bool HttpFrontend::authorized(const HttpRequest& r) const {
  if (options_.api_key.empty()) return true;
  // Anthropic's clients send the key as x-api-key.
  if (const std::string* key = r.header("x-api-key"); key != nullptr && same_secret(*key, options_.api_key)) return true;
  const std::string* auth = r.header("authorization");
  if (auth == nullptr || auth->size() < 7 || auth->compare(0, 7, "Bearer ") != 0) return false;
  return same_secret(auth->substr(7), options_.api_key);
}

void HttpFrontend::send_json(HttpConnection& c, int status, const json& body, const std::string& request_id) {
  http::HttpResponse resp;
  resp.status = status;
  resp.headers.emplace_back("x-request-id", request_id);
  http::add_cors_headers(resp.headers, cors_origin_);
  resp.body = http::compact_dump(body);
  c.respond(resp);
}

void HttpFrontend::send_error(HttpConnection& c, bool ollama, const ApiError& e, const std::string& request_id) {
  http::HttpResponse resp;
  resp.status = e.status;
  resp.headers.emplace_back("x-request-id", request_id);
  if (e.retry_after_s > 0) resp.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  http::add_cors_headers(resp.headers, cors_origin_);
  resp.body = ollama ? http::ollama_error_body(e.message) : http::openai_error_body(e.status, e.message, e.code, e.param);
  c.respond(resp);
}

void HttpFrontend::handle(HttpConnection& c, HttpRequest& r) {
  const std::string request_id = fresh_request_id();
  cors_origin_ = http::allowed_origin(r, options_.cors_origins);
  if (http::is_preflight(r)) return c.respond(http::preflight_response(cors_origin_));  // no key needed
  try {
    if (!authorized(r) && r.path != "/health") {
      send_error(c, is_ollama_path(r.path),
                 ApiError{401, "missing or wrong API key: send 'Authorization: Bearer KEY'", "invalid_api_key", {}, 0},
                 request_id);
      return;
    }
    route(c, r, request_id);
  } catch (const std::exception& e) {
    spdlog::error("http {} {}: {}", r.method, r.path, e.what());
    if (c.answering()) send_error(c, is_ollama_path(r.path), ApiError{500, e.what(), "internal", {}, 0}, request_id);
  }
}

void HttpFrontend::route(HttpConnection& c, HttpRequest& r, const std::string& request_id) {
  const std::string& p = r.path;
  const bool get = r.method == "GET" || r.method == "HEAD";
  const bool post = r.method == "POST";
  const bool ollama = is_ollama_path(p);
  auto wrong_method = [&](const char* allowed) {
    http::HttpResponse resp;
    resp.status = 405;
    resp.headers = {{"x-request-id", request_id}, {"Allow", allowed}};
    http::add_cors_headers(resp.headers, cors_origin_);
    const std::string message = r.method + " is not allowed on " + p + " (use " + allowed + ")";
    resp.body = ollama ? http::ollama_error_body(message) : http::openai_error_body(405, message, "method_not_allowed");
    c.respond(resp);
  };
  if (p == "/v1/completions") return post ? completions(c, r) : wrong_method("POST");
  if (p == "/api/generate") return post ? ollama_generate(c, r) : wrong_method("POST");
  if (p == "/v1/chat/completions") return post ? chat_completions(c, r) : wrong_method("POST");
  if (p == "/api/chat") return post ? ollama_chat(c, r) : wrong_method("POST");
  if (p == "/v1/messages") return post ? anthropic_messages(c, r) : wrong_method("POST");
  if (p == "/v1/messages/count_tokens") return post ? count_tokens(c, r, request_id) : wrong_method("POST");
  if (p == "/tokenize") return post ? tokenize(c, r, request_id) : wrong_method("POST");
  if (p == "/detokenize") return post ? detokenize(c, r, request_id) : wrong_method("POST");
  if (p == "/apply-template") return post ? apply_template(c, r, request_id) : wrong_method("POST");
  if (p == "/v1/responses") return post ? openai_responses(c, r) : wrong_method("POST");
  if (p == "/v1/embeddings") return post ? embeddings(c, r, http::EmbedApi::kOpenAi) : wrong_method("POST");
  if (p == "/api/embed") return post ? embeddings(c, r, http::EmbedApi::kOllama) : wrong_method("POST");
  if (p == "/api/embeddings") return post ? embeddings(c, r, http::EmbedApi::kOllamaLegacy) : wrong_method("POST");
  if (p == "/v1/models" || p.rfind("/v1/models/", 0) == 0 || p == "/api/tags" || p == "/api/ps") {
    return get ? list_models(c, r, request_id) : wrong_method("GET");
  }
  if (p == "/api/version") {
    return get ? send_json(c, 200, json{{"version", options_.version}}, request_id) : wrong_method("GET");
  }
  if (p == "/api/show") return post ? show_model(c, r, request_id) : wrong_method("POST");
  if (p == "/api/pull") return post ? pull_model(c, r, request_id) : wrong_method("POST");
  if (p == "/api/delete") return r.method == "DELETE" ? delete_model(c, r, request_id) : wrong_method("DELETE");
  if (p == "/health") {
    if (!get) return wrong_method("GET");
    const bool serving = !backend_.serving || backend_.serving();
    // The default model ("" when several are served and none is pinned), without listing them all.
    HttpModelStatus default_model;
    proto::ProtocolError none;
    const bool has_default = backend_.find_model && backend_.find_model("", default_model, none);
    return send_json(c, serving ? 200 : 503,
                     json{{"status", serving ? "ok" : "draining"}, {"model", has_default ? default_model.entry.id : ""}},
                     request_id);
  }
  if (p == "/metrics") {
    if (!get) return wrong_method("GET");
    http::HttpResponse resp;
    resp.content_type = "text/plain; version=0.0.4; charset=utf-8";
    resp.headers.emplace_back("x-request-id", request_id);
    http::add_cors_headers(resp.headers, cors_origin_);
    resp.body = backend_.metrics ? backend_.metrics() : std::string();
    return c.respond(resp);
  }
  if (p == "/" || p == "/api") {
    if (!get) return wrong_method("GET");
    http::HttpResponse resp;
    resp.content_type = "text/plain; charset=utf-8";
    resp.headers.emplace_back("x-request-id", request_id);
    http::add_cors_headers(resp.headers, cors_origin_);
    resp.body = "vkstream is running\n";
    return c.respond(resp);
  }
  send_error(c, ollama, ApiError{404, "no endpoint " + r.method + " " + p + " (see docs/HTTP.md)", "not_found", {}, 0},
             request_id);
}

std::vector<HttpModelStatus> HttpFrontend::served_models() const {
  return backend_.models ? backend_.models() : std::vector<HttpModelStatus>{};
}

HttpConnection* HttpFrontend::live(uint64_t conn_id, uint64_t exchange) const {
  HttpConnection* now = server_->find(conn_id);
  return now != nullptr && !now->closing() && now->exchange() == exchange ? now : nullptr;
}

std::shared_ptr<http::JsonBody> HttpFrontend::read_body(HttpConnection& c, HttpRequest& r, const std::string& request_id,
                                                        bool ollama) {
  auto body = http::parse_json_object(r, false, /*any_media_type=*/ollama);
  if (auto* f = std::get_if<http::ParseFailure>(&body)) {
    send_error(c, ollama, ApiError{f->status, f->message, f->code, {}, 0}, request_id);
    return nullptr;
  }
  return std::make_shared<http::JsonBody>(std::move(std::get<http::JsonBody>(body)));
}

std::optional<http::ModelChoice> HttpFrontend::read_choice(HttpConnection& c, const http::JsonBody& body,
                                                           const std::string& request_id, bool ollama) {
  // Ollama's surfaces require a model and read keep_alive; the others default to the first model.
  auto choice = http::read_model_choice(body, /*required=*/ollama, /*keep_alive=*/ollama);
  if (auto* e = std::get_if<ApiError>(&choice)) {
    send_error(c, ollama, *e, request_id);
    return std::nullopt;
  }
  return std::move(std::get<http::ModelChoice>(choice));
}

void HttpFrontend::resolve(HttpConnection& c, const std::string& request_id, bool ollama,
                           std::shared_ptr<http::JsonBody> body, http::ModelChoice choice, Resolved then) {
  if (!backend_.resolve_model) {
    return send_error(c, ollama, ApiError{503, "this server serves no model", "unsupported", {}, 0}, request_id);
  }
  const uint64_t conn_id = c.id();
  const uint64_t exchange = c.exchange();
  auto still_wanted = [this, conn_id, exchange] { return live(conn_id, exchange) != nullptr; };
  const std::string name = choice.name;
  const std::optional<double> keep_alive = choice.keep_alive;
  choice.asked_at = std::chrono::steady_clock::now();
  backend_.resolve_model(
      name, keep_alive, std::move(still_wanted),
      [this, conn_id, exchange, request_id, ollama, origin = cors_origin_, body = std::move(body),
       choice = std::move(choice), then = std::move(then)](std::shared_ptr<const http::ModelCatalogue> entry,
                                                            proto::ProtocolError error) mutable {
        // Maybe later, from a libuv callback (the load finished): nothing may escape.
        try {
          choice.load_ns =
              std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - choice.asked_at).count();
          HttpConnection* now = live(conn_id, exchange);
          if (now == nullptr) return;  // the client left while its model loaded: nothing starts
          cors_origin_ = origin;       // answered later than its request
          if (!entry) return send_error(*now, ollama, http::model_resolve_error(error), request_id);
          // The entry is the authority on the name: the mappers check the body's model against it.
          if (auto it = body->find("model"); it != body->end() && it->is_string()) it->get_ref<std::string&>() = entry->id;
          then(*now, *body, *entry, choice);
        } catch (const std::exception& e) {
          spdlog::error("http: answering {}: {}", request_id, e.what());
          if (HttpConnection* now = live(conn_id, exchange); now != nullptr && now->answering()) {
            send_error(*now, ollama, ApiError{500, e.what(), "internal", {}, 0}, request_id);
          }
        }
      });
}

void HttpFrontend::with_resolved(HttpConnection& c, HttpRequest& r, const std::string& request_id, bool ollama,
                                 Resolved then) {
  std::shared_ptr<http::JsonBody> body = read_body(c, r, request_id, ollama);
  if (!body) return;
  std::optional<http::ModelChoice> choice = read_choice(c, *body, request_id, ollama);
  if (!choice) return;
  resolve(c, request_id, ollama, std::move(body), std::move(*choice), std::move(then));
}

template <class Request>
std::optional<Request> HttpFrontend::mapped(HttpConnection& c, const std::string& request_id, bool ollama,
                                            std::variant<Request, ApiError> result) {
  if (auto* e = std::get_if<ApiError>(&result)) {
    send_error(c, ollama, *e, request_id);
    return std::nullopt;
  }
  return std::move(std::get<Request>(result));
}

namespace {

// What every generation of a resolved model starts with: its API and model (the wire request names the
// model too, with the keep_alive asked), when the request arrived (before its model loaded) and how
// long it waited for the load.
http::Generation generation_for(http::Api api, const http::ModelCatalogue& entry, const http::ModelChoice& choice,
                                bool stream, json& wire) {
  http::Generation g;
  g.api = api;
  g.started = choice.asked_at;
  g.load_ns = choice.load_ns;
  g.model = entry.id;
  g.stream = stream;
  http::add_model_fields(wire, entry.id, choice.keep_alive);
  return g;
}

// A chat API's answer parsing: the tool calls it offered, and the model's reasoning block.
void parse_chat_answer(http::Generation& g, std::optional<chat::ToolCallParser> tools, const http::ModelCatalogue& entry,
                       const json& wire) {
  g.tools = std::move(tools);
  g.reasoning = http::reasoning_parser(entry, wire);
  g.reasoning_counter = g.reasoning;
  if (const auto it = wire.find("enable_thinking"); it != wire.end() && it->is_boolean()) g.enable_thinking = it->get<bool>();
}

// The request's own x-request-id when it is a valid wire id (read now: the request may be answered later).
std::string client_request_id(const HttpRequest& r) {
  const std::string* chosen = r.header("x-request-id");
  return chosen != nullptr && valid_client_id(*chosen) ? *chosen : std::string();
}

}  // namespace

void HttpFrontend::list_models(HttpConnection& c, HttpRequest& r, const std::string& request_id) {
  const std::string& p = r.path;
  if (p.size() > 11 && p.rfind("/v1/models/", 0) == 0) {  // /v1/models/{id}: one model, no listing
    if (std::optional<HttpModelStatus> m = find_model(c, false, p.substr(11), request_id)) {
      send_json(c, 200, http::openai_model(m->entry), request_id);
    }
    return;
  }
  const std::vector<HttpModelStatus> models = served_models();
  if (p == "/api/ps") {  // only what is loaded, with what it holds and when it goes
    std::vector<http::LoadedModel> loaded;
    for (const HttpModelStatus& m : models) {
      if (m.loaded) loaded.push_back(http::LoadedModel{m.entry, m.resident_bytes, m.expires_in_ms});
    }
    return send_json(c, 200, http::ollama_ps(loaded), request_id);
  }
  std::vector<http::ModelCatalogue> entries;
  for (const HttpModelStatus& m : models) entries.push_back(m.entry);
  if (p == "/api/tags") return send_json(c, 200, http::ollama_tags(entries), request_id);
  send_json(c, 200, http::openai_models(entries), request_id);  // /v1/models
}

std::optional<HttpModelStatus> HttpFrontend::find_model(HttpConnection& c, bool ollama, const std::string& name,
                                                        const std::string& request_id) {
  HttpModelStatus found;
  proto::ProtocolError error;
  if (backend_.find_model && backend_.find_model(name, found, error)) return found;
  if (!backend_.find_model) error = proto::make_error(proto::WireError::kNotFound, "this server serves no model", "model");
  send_error(c, ollama, http::model_resolve_error(error), request_id);
  return std::nullopt;
}

// Answered from the listing, without loading: a model not loaded shows what its GGUF header and
// chat template say (details, context length, capabilities); its shapes are complete once it is
// loaded. Loading a model for a metadata query would evict the models that are working.
void HttpFrontend::show_model(HttpConnection& c, HttpRequest& r, const std::string& request_id) {
  std::shared_ptr<http::JsonBody> body = read_body(c, r, request_id, true);
  if (!body) return;
  std::string name;
  for (const char* key : {"model", "name"}) {
    if (body->contains(key) && (*body)[key].is_string()) name = (*body)[key].get<std::string>();
  }
  if (name.empty()) return send_error(c, true, ApiError{400, "model is required", "missing_field", "model", 0}, request_id);
  if (std::optional<HttpModelStatus> m = find_model(c, true, name, request_id)) {
    send_json(c, 200, http::ollama_show(m->entry), request_id);
  }
}

void HttpFrontend::unload_model(HttpConnection& c, const std::string& request_id, const std::string& name, bool chat) {
  std::optional<HttpModelStatus> m = find_model(c, true, name, request_id);  // "" = the default
  if (!m) return;
  if (backend_.unload) backend_.unload(m->entry.id);  // false when not loaded: Ollama answers the same
  send_json(c, 200, chat ? http::ollama_chat_loaded(m->entry, "unload") : http::ollama_generate_loaded(m->entry.id, "unload"),
            request_id);
}

void HttpFrontend::completions(HttpConnection& conn, HttpRequest& r) {
  const std::string request_id = fresh_request_id();
  with_resolved(conn, r, request_id, false,
                [this, request_id, client_id = client_request_id(r)](HttpConnection& c, http::JsonBody& b,
                                                                     const http::ModelCatalogue& entry,
                                                                     const http::ModelChoice& choice) {
                  auto req = mapped(c, request_id, false, http::map_openai_completion(b, entry));
                  if (!req) return;
                  http::Generation g = generation_for(http::Api::kOpenAiCompletion, entry, choice, req->stream, req->wire);
                  g.include_usage = req->include_usage;
                  g.logprobs = req->logprobs;
                  submit_choices(c, client_id, std::move(g), std::move(req->wire), http::openai_param_names(), req->n);
                });
}

void HttpFrontend::ollama_generate(HttpConnection& conn, HttpRequest& r) {
  const std::string request_id = fresh_request_id();
  std::shared_ptr<http::JsonBody> body = read_body(conn, r, request_id, true);
  if (!body) return;
  std::optional<http::ModelChoice> asked = read_choice(conn, *body, request_id, true);
  if (!asked) return;
  // Ollama's unload call: no prompt and keep_alive 0. It loads nothing first.
  if (asked->keep_alive == 0.0 && http::ollama_empty_prompt(*body, /*chat=*/false)) {
    return unload_model(conn, request_id, asked->name, /*chat=*/false);
  }
  resolve(conn, request_id, true, std::move(body), std::move(*asked),
          [this, request_id, client_id = client_request_id(r)](HttpConnection& c, http::JsonBody& b,
                                                               const http::ModelCatalogue& entry,
                                                               const http::ModelChoice& choice) {
            auto req = mapped(c, request_id, true, http::map_ollama_generate(b, entry));
            if (!req) return;
            // Ollama's load call (no prompt): resolving it loaded the model.
            if (req->load_only) return send_json(c, 200, http::ollama_generate_loaded(entry.id, "load"), request_id);
            http::Generation g = generation_for(http::Api::kOllamaGenerate, entry, choice, req->stream, req->wire);
            submit(c, client_id, std::move(g), std::move(req->wire), http::ollama_param_names());
          });
}

void HttpFrontend::chat_completions(HttpConnection& conn, HttpRequest& r) {
  const std::string request_id = fresh_request_id();
  with_resolved(conn, r, request_id, false,
                [this, request_id, client_id = client_request_id(r)](HttpConnection& c, http::JsonBody& b,
                                                                     const http::ModelCatalogue& entry,
                                                                     const http::ModelChoice& choice) {
                  auto req = mapped(c, request_id, false, http::map_openai_chat(b, entry));
                  if (!req) return;
                  http::Generation g = generation_for(http::Api::kOpenAiChat, entry, choice, req->stream, req->wire);
                  g.include_usage = req->include_usage;
                  g.logprobs = req->logprobs;
                  parse_chat_answer(g, std::move(req->tools), entry, req->wire);
                  submit_choices(c, client_id, std::move(g), std::move(req->wire), http::openai_chat_param_names(), req->n);
                });
}

void HttpFrontend::ollama_chat(HttpConnection& conn, HttpRequest& r) {
  const std::string request_id = fresh_request_id();
  std::shared_ptr<http::JsonBody> body = read_body(conn, r, request_id, true);
  if (!body) return;
  std::optional<http::ModelChoice> asked = read_choice(conn, *body, request_id, true);
  if (!asked) return;
  if (asked->keep_alive == 0.0 && http::ollama_empty_prompt(*body, /*chat=*/true)) {
    return unload_model(conn, request_id, asked->name, /*chat=*/true);
  }
  resolve(conn, request_id, true, std::move(body), std::move(*asked),
          [this, request_id, client_id = client_request_id(r)](HttpConnection& c, http::JsonBody& b,
                                                               const http::ModelCatalogue& entry,
                                                               const http::ModelChoice& choice) {
            auto req = mapped(c, request_id, true, http::map_ollama_chat(b, entry));
            if (!req) return;
            if (req->load_only) return send_json(c, 200, http::ollama_chat_loaded(entry), request_id);
            http::Generation g = generation_for(http::Api::kOllamaChat, entry, choice, req->stream, req->wire);
            parse_chat_answer(g, std::move(req->tools), entry, req->wire);
            g.show_reasoning = req->show_reasoning;
            submit(c, client_id, std::move(g), std::move(req->wire), http::ollama_chat_param_names());
          });
}

void HttpFrontend::anthropic_messages(HttpConnection& conn, HttpRequest& r) {
  const std::string request_id = fresh_request_id();
  with_resolved(conn, r, request_id, false,
                [this, request_id, client_id = client_request_id(r)](HttpConnection& c, http::JsonBody& b,
                                                                     const http::ModelCatalogue& entry,
                                                                     const http::ModelChoice& choice) {
                  auto req = mapped(c, request_id, false, http::map_anthropic_messages(b, entry));
                  if (!req) return;
                  http::Generation g = generation_for(http::Api::kAnthropicMessages, entry, choice, req->stream, req->wire);
                  parse_chat_answer(g, std::move(req->tools), entry, req->wire);
                  g.show_reasoning = req->show_reasoning;
                  submit(c, client_id, std::move(g), std::move(req->wire), http::anthropic_param_names());
                });
}

void HttpFrontend::openai_responses(HttpConnection& conn, HttpRequest& r) {
  const std::string request_id = fresh_request_id();
  with_resolved(conn, r, request_id, false,
                [this, request_id, client_id = client_request_id(r)](HttpConnection& c, http::JsonBody& b,
                                                                     const http::ModelCatalogue& entry,
                                                                     const http::ModelChoice& choice) {
                  auto req = mapped(c, request_id, false, http::map_openai_responses(b, entry));
                  if (!req) return;
                  http::Generation g = generation_for(http::Api::kOpenAiResponses, entry, choice, req->stream, req->wire);
                  parse_chat_answer(g, std::move(req->tools), entry, req->wire);
                  g.echo = std::move(req->echo);
                  submit(c, client_id, std::move(g), std::move(req->wire), http::openai_responses_param_names());
                });
}

void HttpFrontend::run_model_work(HttpConnection& c, const std::string& request_id, const std::string& model_id,
                                  Backend::ModelWork work, std::shared_ptr<std::optional<proto::ProtocolError>> failed,
                                  const std::map<std::string, std::string>& names, bool client_template) {
  if (!backend_.with_model) {
    return send_error(c, false, ApiError{501, "this server has no model to tokenize with", "unsupported", {}, 0}, request_id);
  }
  const uint64_t conn_id = c.id();
  const uint64_t exchange = c.exchange();
  auto still_wanted = [this, conn_id, exchange] { return live(conn_id, exchange) != nullptr; };
  backend_.with_model(
      conn_id, model_id, std::move(work), client_template, std::move(still_wanted),
      [this, conn_id, exchange, request_id, origin = cors_origin_, failed, &names](json answer, std::exception_ptr error) {
        // On the loop, from libuv's after-work callback: nothing may escape.
        try {
          HttpConnection* now = live(conn_id, exchange);
          if (now == nullptr) return;  // the client left
          cors_origin_ = origin;  // answered later than its request
          if (error) {
            std::string what = "the request failed";
            try {
              std::rethrow_exception(error);
            } catch (const std::exception& e) {
              what = e.what();
            } catch (...) {
            }
            return send_error(*now, false, ApiError{500, what, "internal", {}, 0}, request_id);
          }
          if (failed && *failed) return send_error(*now, false, http::api_error_from_wire(**failed, 0, names), request_id);
          send_json(*now, 200, answer, request_id);
        } catch (const std::exception& e) {
          spdlog::error("http: answering {}: {}", request_id, e.what());
        }
      });
}

// Anthropic's token count: the Messages request rendered and tokenized as /v1/messages would
// (system, tools, tool traffic, thinking switch), nothing generated.
void HttpFrontend::answer_rendered(HttpConnection& c, const std::string& request_id, const std::string& model_id,
                                   json wire, const std::map<std::string, std::string>& names,
                                   std::function<json(const GenerateRequest&, std::string)> answer) {
  auto message = http::to_chat_request(std::move(wire), options_.wire_limits, names);
  if (auto* e = std::get_if<ApiError>(&message)) return send_error(c, false, *e, request_id);
  auto request = std::make_shared<const proto::ChatRequest>(std::move(std::get<proto::ChatRequest>(message)));
  auto failed = std::make_shared<std::optional<proto::ProtocolError>>();
  run_model_work(
      c, request_id, model_id,
      [request, failed, answer = std::move(answer)](const chat::ModelChatTemplate& tmpl, const Tokenizer& tok) {
        GenerateRequest rendered;
        std::string text;
        *failed = render_chat_request(*request, rendered, tmpl, tok, &text);
        return answer(rendered, std::move(text));
      },
      failed, names, request->chat_template.has_value());
}

void HttpFrontend::count_tokens(HttpConnection& conn, HttpRequest& r, const std::string& request_id) {
  with_resolved(conn, r, request_id, false,
                [this, request_id](HttpConnection& c, http::JsonBody& b, const http::ModelCatalogue& entry,
                                   const http::ModelChoice&) {
                  auto req = mapped(c, request_id, false, http::map_anthropic_messages(http::count_tokens_body(b), entry));
                  if (!req) return;
                  answer_rendered(c, request_id, entry.id, std::move(req->wire), http::anthropic_param_names(),
                                  [](const GenerateRequest& rendered, std::string) {
                                    return json{{"input_tokens", rendered.prompt_ids.size()}};
                                  });
                });
}

// llama.cpp's /apply-template: an OpenAI chat request's prompt as the template renders it.
void HttpFrontend::apply_template(HttpConnection& conn, HttpRequest& r, const std::string& request_id) {
  with_resolved(conn, r, request_id, false,
                [this, request_id](HttpConnection& c, http::JsonBody& b, const http::ModelCatalogue& entry,
                                   const http::ModelChoice&) {
                  auto req = mapped(c, request_id, false, http::map_openai_chat(b, entry));
                  if (!req) return;
                  answer_rendered(c, request_id, entry.id, std::move(req->wire), http::openai_chat_param_names(),
                                  [](const GenerateRequest&, std::string text) { return json{{"prompt", std::move(text)}}; });
                });
}

void HttpFrontend::tokenize(HttpConnection& conn, HttpRequest& r, const std::string& request_id) {
  with_resolved(conn, r, request_id, false,
                [this, request_id](HttpConnection& c, http::JsonBody& b, const http::ModelCatalogue& entry,
                                   const http::ModelChoice&) {
                  auto req = mapped(c, request_id, false, http::map_tokenize(b));
                  if (!req) return;
                  run_model_work(
                      c, request_id, entry.id,
                      [req = std::move(*req)](const chat::ModelChatTemplate&, const Tokenizer& tok) {
                        // add_special as llama.cpp: the BOS the model adds by default, if it adds one.
                        const std::vector<TokenId> ids =
                            tok.encode(req.content, req.add_special && tok.add_bos_default(), req.parse_special);
                        return http::tokenize_answer(ids, req.with_pieces, [&tok](TokenId id) {
                          std::string piece = tok.token_bytes(id);
                          if (piece.empty()) piece = std::string(tok.token_text(id));  // a control token: its vocabulary string
                          return piece;
                        });
                      },
                      nullptr, http::openai_param_names());
                });
}

void HttpFrontend::detokenize(HttpConnection& conn, HttpRequest& r, const std::string& request_id) {
  with_resolved(conn, r, request_id, false,
                [this, request_id](HttpConnection& c, http::JsonBody& b, const http::ModelCatalogue& entry,
                                   const http::ModelChoice&) {
                  auto ids = mapped(c, request_id, false, http::map_detokenize(b, entry.info.vocab_size));
                  if (!ids) return;
                  run_model_work(
                      c, request_id, entry.id,
                      [ids = std::move(*ids)](const chat::ModelChatTemplate&, const Tokenizer& tok) {
                        return json{{"content", tok.decode(ids)}};
                      },
                      nullptr, http::openai_param_names());
                });
}

void HttpFrontend::embeddings(HttpConnection& conn, HttpRequest& r, http::EmbedApi api) {
  const bool ollama = api != http::EmbedApi::kOpenAi;
  const std::string request_id = fresh_request_id();
  with_resolved(conn, r, request_id, ollama,
                [this, request_id, api, ollama, client_id = client_request_id(r)](
                    HttpConnection& c, http::JsonBody& b, const http::ModelCatalogue& entry, const http::ModelChoice& choice) {
                  auto read = mapped(c, request_id, ollama,
                                     api == http::EmbedApi::kOpenAi   ? http::map_openai_embeddings(b, entry)
                                     : api == http::EmbedApi::kOllama ? http::map_ollama_embed(b, entry)
                                                                      : http::map_ollama_embeddings_legacy(b, entry));
                  if (!read) return;
                  http::EmbedHttpRequest& req = *read;
                  // Ollama's load call (no input): resolving it loaded the model.
                  if (req.load_only) return send_json(c, 200, http::embeddings_answer(req, entry.id, {}), request_id);
                  // The whole answer goes out at once: it must fit the connection's output bound (~16 bytes a float).
                  const size_t inputs = std::max(req.wire.value("input", json::array()).size(),
                                                 req.wire.value("tokens", json::array()).size());
                  const size_t bytes_per_vector = 16 * static_cast<size_t>(std::max(1, entry.info.dim)) + 64;
                  if (inputs * bytes_per_vector > options_.limits.max_output_bytes) {
                    const size_t fit = std::max<size_t>(1, options_.limits.max_output_bytes / bytes_per_vector);
                    return send_error(c, ollama,
                                      ApiError{400,
                                               std::to_string(inputs) + " vectors of " + std::to_string(entry.info.dim) +
                                                   " floats exceed the answer bound; send at most " + std::to_string(fit) +
                                                   " inputs per request",
                                               "invalid_field", api == http::EmbedApi::kOllamaLegacy ? "prompt" : "input", 0},
                                      request_id);
                  }
                  http::Generation g = generation_for(http::Api::kEmbed, entry, choice, false, req.wire);
                  g.embed.api = req.api;
                  g.embed.base64 = req.base64;
                  submit(c, client_id, std::move(g), std::move(req.wire), http::embed_param_names(api));
                });
}

void HttpFrontend::submit(HttpConnection& c, const std::string& client_id, http::Generation g, json wire,
                          const std::map<std::string, std::string>& names, std::shared_ptr<const RenderedChat> rendered) {
  const bool ollama = g.ollama();
  g.cors_origin = cors_origin_;
  if (!client_id.empty()) wire["id"] = client_id;
  const uint64_t conn_id = c.id();
  const uint64_t exchange = c.exchange();
  auto still_wanted = [this, conn_id, exchange] { return live(conn_id, exchange) != nullptr; };
  const bool chat = http::is_chat(g.api);
  const http::Api g_api = g.api;
  auto done = [this, conn_id, exchange, g = std::move(g), &names](const HttpSubmitOutcome& outcome) mutable {
    submitted(conn_id, exchange, std::move(g), outcome, names);
  };
  if (g_api == http::Api::kEmbed) {
    auto message = http::to_embed_request(std::move(wire), options_.wire_limits, names);
    if (auto* e = std::get_if<ApiError>(&message)) return send_error(c, ollama, *e, fresh_request_id());
    if (!backend_.submit_embed) {
      return send_error(c, ollama, ApiError{501, "embeddings are not supported by this server", "unsupported", {}, 0},
                        fresh_request_id());
    }
    return backend_.submit_embed(conn_id, std::move(std::get<proto::EmbedRequest>(message)), still_wanted, std::move(done));
  }
  if (chat) {
    auto message = http::to_chat_request(std::move(wire), options_.wire_limits, names);
    if (auto* e = std::get_if<ApiError>(&message)) return send_error(c, ollama, *e, fresh_request_id());
    if (!backend_.submit_chat) {
      return send_error(c, ollama, ApiError{501, "chat is not supported by this server", "unsupported", {}, 0},
                        fresh_request_id());
    }
    return backend_.submit_chat(conn_id, std::move(std::get<proto::ChatRequest>(message)), std::move(rendered), still_wanted,
                                std::move(done));
  }
  auto message = http::to_generate_message(std::move(wire), options_.wire_limits, names);
  if (auto* e = std::get_if<ApiError>(&message)) return send_error(c, ollama, *e, fresh_request_id());
  backend_.submit(conn_id, std::move(std::get<proto::GenerateMessage>(message)), still_wanted, std::move(done));
}

void HttpFrontend::submitted(uint64_t conn_id, uint64_t exchange, http::Generation g, const HttpSubmitOutcome& outcome,
                             const std::map<std::string, std::string>& names) {
  const bool ollama = g.ollama();
  HttpConnection* c = live(conn_id, exchange);
  if (c == nullptr) return;  // gone: its close cancelled the request
  cors_origin_ = g.cors_origin;  // answered later than its request
  const bool later_choice = g.group != nullptr && g.choice > 0;
  if (later_choice && g.group->failed) return;  // a sibling failed first: the answer is its error
  if (!outcome.ok) {
    ApiError e = http::api_error_from_wire(outcome.error, outcome.retry_after_ms, names);
    if (later_choice) {
      e.message = "choice " + std::to_string(g.choice) + ": " + e.message;
      return fail_choices(*c, g.group, g.stream, e);
    }
    return send_error(*c, ollama, e, outcome.id.empty() ? fresh_request_id() : outcome.id);
  }
  if (outcome.request_template) http::parse_with_template(g, *outcome.request_template);
  g.id = outcome.id;
  g.created_unix = http::unix_now();
  g.conn_id = conn_id;
  g.exchange = exchange;
  g.prompt_tokens = outcome.prompt_tokens;
  if (g.group) {
    if (g.choice == 0) {
      g.group->rendered = outcome.rendered;  // the later choices are the same conversation
      g.group->answer_id = g.id;
      g.group->conn_id = conn_id;
      g.group->exchange = exchange;
      g.group->later.created_unix = g.created_unix;  // every chunk of the answer shows one time
    } else {
      g.created_unix = g.group->later.created_unix;
    }
    g.group_answer_id = g.group->answer_id;
  }
  if (later_choice) {  // the answer (its stream) began with choice 0
    if (g.stream && g.api == http::Api::kOpenAiChat && !c->send_chunk(http::openai_chat_first_chunk(g))) return;
    generations_.emplace(g.id, std::move(g));
    return;
  }
  if (g.stream) {
    http::HeaderList headers = {{"x-request-id", g.id}, {"Cache-Control", "no-cache"}};
    http::add_cors_headers(headers, g.cors_origin);
    c->begin_stream(200, ollama ? "application/x-ndjson" : "text/event-stream", headers);
    if (g.api == http::Api::kOpenAiChat && !c->send_chunk(http::openai_chat_first_chunk(g))) return;  // closed
    if (g.api == http::Api::kAnthropicMessages && !c->send_chunk(http::anthropic_message_start(g))) return;
    if (g.api == http::Api::kOpenAiResponses && !c->send_chunk(http::responses_created_event(g))) return;
  }
  generations_.emplace(g.id, std::move(g));
}

std::string HttpFrontend::render_tokens(http::Generation& g, const proto::StreamEvent& ev) {
  if (g.reasoning_counter) {
    chat::ReasoningSplit split;
    g.reasoning_counter->feed(ev.text, split);
    if (split.content.empty() && g.reasoning_counter->thought()) g.reasoning_tokens += static_cast<int32_t>(ev.ids.size());
    if (!split.content.empty()) g.reasoning_counter.reset();  // the block is over: nothing more to count
  }
  const http::TokenText token_text = [this, &g](proto::TokenId id) { return backend_.token_text(g.model, id); };
  switch (g.api) {
    case http::Api::kOpenAiCompletion:
      if (g.stream) return http::openai_token_chunk(g, ev, token_text);
      http::openai_accumulate(g, ev, token_text);
      return {};
    case http::Api::kOpenAiChat:
      if (g.stream) return http::openai_chat_token_chunk(g, ev, token_text);
      http::openai_chat_accumulate(g, ev, token_text);
      return {};
    case http::Api::kOllamaGenerate:
    case http::Api::kOllamaChat:
      if (g.stream) return g.api == http::Api::kOllamaChat ? http::ollama_chat_line(g, ev) : http::ollama_token_line(g, ev);
      g.text += ev.text;
      return {};
    case http::Api::kAnthropicMessages:
      if (g.stream) return http::anthropic_token_events(g, ev);
      g.text += ev.text;
      return {};
    case http::Api::kOpenAiResponses:
      if (g.stream) return http::responses_token_events(g, ev);
      g.text += ev.text;
      return {};
    case http::Api::kEmbed:
      return {};
  }
  return {};
}

void HttpFrontend::on_event(const proto::StreamEvent& ev) {
  auto it = generations_.find(ev.id);
  if (it == generations_.end() || it->second.api == http::Api::kEmbed) return;  // embeds: on_embed_result
  http::Generation& g = it->second;
  HttpConnection* c = live(g.conn_id, g.exchange);
  if (c == nullptr) {
    generations_.erase(it);  // the client went away; its close cancelled the request
    return;
  }
  // Choice 0's first token (or its end) lets the other choices of its answer in: its prompt's
  // blocks are in the prefix cache now. Submitted after this event is handled (a submission may
  // add to generations_ at once).
  std::shared_ptr<http::ChoiceGroup> later_choices;
  if (g.group && g.choice == 0 && !g.group->later_submitted &&
      (ev.type == proto::StreamEventType::kToken ||
       (ev.type == proto::StreamEventType::kFinished && ev.reason != proto::FinishReason::kError))) {
    later_choices = g.group;
    later_choices->later_submitted = true;
  }
  switch (ev.type) {
    case proto::StreamEventType::kToken: {
      const std::string piece = render_tokens(g, ev);
      if (!piece.empty() && !c->send_chunk(piece)) generations_.erase(it);  // slow reader: closed, cancelled
      break;
    }
    case proto::StreamEventType::kError:
      g.error_message = ev.error_message;
      g.error_code = ev.error_code;
      break;
    case proto::StreamEventType::kFinished:
      if (g.group) {
        std::shared_ptr<http::ChoiceGroup> group = g.group;
        finish_choice(*c, g, ev);
        if (!group->failed) generations_.erase(ev.id);  // (failing erased every choice)
      } else {
        finish(*c, g, ev);
        generations_.erase(it);
      }
      break;
    default:
      break;
  }
  if (later_choices) submit_later_choices(later_choices);
}

void HttpFrontend::finish(HttpConnection& c, http::Generation& g, const proto::StreamEvent& ev) {
  const bool ollama = g.ollama();
  cors_origin_ = g.cors_origin;
  const bool chat = http::is_chat(g.api);
  if (g.stream) {
    if (ollama) {
      if (chat) c.send_chunk(http::ollama_chat_held_line(g));
      json last = chat ? http::ollama_chat_final(g, ev, /*with_text=*/false) : http::ollama_final(g, ev, /*with_text=*/false);
      if (ev.reason == proto::FinishReason::kError) last["error"] = g.error_message.empty() ? "generation failed" : g.error_message;
      c.send_chunk(http::compact_dump(last) + "\n");
    } else {
      c.send_chunk(g.api == http::Api::kAnthropicMessages ? http::anthropic_final_events(g, ev)
                   : g.api == http::Api::kOpenAiResponses ? http::responses_final_events(g, ev)
                   : chat ? http::openai_chat_final_chunks(g, ev) : http::openai_final_chunks(g, ev));
    }
    c.end_stream();
    return;
  }
  if (ev.reason == proto::FinishReason::kError) {
    return send_error(c, ollama,
                      ApiError{500, g.error_message.empty() ? "generation failed" : g.error_message, "generation_failed", {}, 0},
                      g.id);
  }
  http::HttpResponse resp;
  resp.headers.emplace_back("x-request-id", g.id);
  http::add_cors_headers(resp.headers, g.cors_origin);
  switch (g.api) {
    case http::Api::kOpenAiCompletion: resp.body = http::compact_dump(http::openai_completion(g, ev)); break;
    case http::Api::kOpenAiChat: resp.body = http::compact_dump(http::openai_chat_completion(g, ev)); break;
    case http::Api::kOllamaGenerate: resp.body = http::compact_dump(http::ollama_final(g, ev, /*with_text=*/true)); break;
    case http::Api::kOllamaChat: resp.body = http::compact_dump(http::ollama_chat_final(g, ev, /*with_text=*/true)); break;
    case http::Api::kAnthropicMessages: resp.body = http::compact_dump(http::anthropic_message(g, ev)); break;
    case http::Api::kOpenAiResponses: resp.body = http::compact_dump(http::responses_object(g, ev)); break;
    case http::Api::kEmbed: return;  // answered by answer_embed
  }
  c.respond(resp);
}

void HttpFrontend::on_embed_result(const std::string& id, const EmbedResult& result) {
  auto it = generations_.find(id);
  if (it == generations_.end()) return;
  const http::Generation& g = it->second;
  if (HttpConnection* c = live(g.conn_id, g.exchange)) answer_embed(*c, g, result);
  generations_.erase(it);  // answered, or the client went away (its close cancelled the request)
}

void HttpFrontend::answer_embed(HttpConnection& c, const http::Generation& g, const EmbedResult& result) {
  const bool ollama = g.ollama();
  cors_origin_ = g.cors_origin;
  if (const auto* error = std::get_if<proto::ProtocolError>(&result)) {  // no partial answer
    const bool deadline = error->code == proto::WireError::kDeadlineExceeded;
    const std::string message = error->message.empty() ? "the embed request failed" : error->message;
    return send_error(c, ollama, ApiError{deadline ? 504 : 500, message, deadline ? "deadline_exceeded" : "embed_failed", {}, 0},
                      g.id);
  }
  const proto::EmbedAnswer& answer = std::get<proto::EmbedAnswer>(result);
  http::HttpResponse resp;
  resp.headers.emplace_back("x-request-id", g.id);
  http::add_cors_headers(resp.headers, g.cors_origin);
  http::EmbedResult embedded;
  embedded.vectors = answer.embeddings;
  embedded.prompt_tokens = answer.usage.prompt_tokens > 0 ? answer.usage.prompt_tokens : g.prompt_tokens;
  embedded.total_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - g.started).count();
  embedded.load_ns = g.load_ns;
  resp.body = http::compact_dump(http::embeddings_answer(g.embed, g.model, embedded));
  c.respond(resp);
}

void HttpFrontend::on_closed(HttpConnection& c) {
  for (auto it = generations_.begin(); it != generations_.end();) {
    it = it->second.conn_id == c.id() ? generations_.erase(it) : std::next(it);
  }
  if (backend_.connection_closed) backend_.connection_closed(c.id());
}

}  // namespace vks::server
