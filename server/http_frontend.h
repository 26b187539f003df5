#pragma once
// The HTTP front end of vkstreamd: OpenAI- and Ollama-compatible endpoints, /health and /metrics,
// on the daemon's loop thread (server/http/ is the transport and the API mappings). A generation
// is submitted through the daemon like any other request (same ids, registry, PUB topic, limits);
// its wire events (the ones every other transport gets) come back through on_event, an embed's
// answer or error through on_embed_result, and are rendered for the API that asked.
// A connection that goes away cancels its request at once (Backend::connection_closed).
// Models: each request names one (docs/HTTP.md "Models"); the front end resolves it through the
// backend (loading it when needed) before mapping the request, and routes the wire request to it.
#include <uv.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/chat/model_chat_template.h"
#include "protocol/errors.h"
#include "protocol/limits.h"
#include "protocol/requests.h"
#include "protocol/responses.h"
#include "server/http/api_common.h"
#include "server/http/choice_group.h"
#include "server/http/generation.h"
#include "server/http/http_limits.h"
#include "server/http/http_server.h"
#include "store/model_catalog.h"
#include "server/http/json_body.h"
#include "server/http/model_choice.h"
#include "server/http/ollama_pull.h"

namespace vks {
// Named only by the model work (tokenize, count_tokens, apply-template), which the daemon runs
// with the model's own tokenizer; events and answers reach the front end as wire types.
class Tokenizer;
struct GenerateRequest;
}  // namespace vks

namespace vks::server {

struct RenderedChat;  // server/chat_render.h: only carried here

struct HttpSubmitOutcome {
  bool ok = false;
  std::string id;
  int32_t prompt_tokens = 0;
  proto::ProtocolError error;
  int32_t retry_after_ms = 0;
  // A chat that sent its own chat_template: that template (its answer is parsed in its formats,
  // not the served template's).
  std::shared_ptr<const chat::ModelChatTemplate> request_template;
  // A chat's rendering, for the later choices of its n > 1 answer (submit_chat's `rendered`).
  std::shared_ptr<const RenderedChat> rendered;
};

// A servable model as the HTTP surfaces list it (/v1/models, /api/tags, /api/ps).
struct HttpModelStatus {
  // Complete for a loaded model; one not loaded yet has id, file_bytes, created_unix, digest and
  // what its GGUF header says (info.name, architecture, context_length; file_type).
  http::ModelCatalogue entry;
  bool loaded = false;
  uint64_t resident_bytes = 0;   // loaded: weights + KV pool + recurrent states
  int64_t expires_in_ms = -1;    // loaded: when it unloads if it stays idle (-1: never by itself)
};

struct HttpFrontendOptions {
  std::vector<std::string> endpoints;  // --http values
  std::string api_key;                 // required as "Authorization: Bearer" when not empty
  uint32_t unix_mode = 0660;
  http::HttpLimits limits;
  proto::ProtocolLimits wire_limits;
  std::string version = "0.1.0";
  std::vector<std::string> cors_origins;  // --http-cors: allowed browser origins besides localhost
};

class HttpFrontend {
 public:
  struct Backend {
    // Submits (a long prompt is tokenized off the loop first); `done` runs on the loop thread, at
    // once or later, unless `still_wanted` says the client went away meanwhile.
    std::function<void(uint64_t conn_id, proto::GenerateMessage message, std::function<bool()> still_wanted,
                       std::function<void(HttpSubmitOutcome)> done)>
        submit;
    // The same for a chat request: rendered with the chat template and tokenized off the loop first,
    // unless `rendered` (an earlier choice's outcome: the same conversation) gives its rendering.
    std::function<void(uint64_t conn_id, proto::ChatRequest message, std::shared_ptr<const RenderedChat> rendered,
                       std::function<bool()> still_wanted, std::function<void(HttpSubmitOutcome)> done)>
        submit_chat;
    // An embed request (no stream): its one answer comes back through on_embed_result.
    std::function<void(uint64_t conn_id, proto::EmbedRequest message, std::function<bool()> still_wanted,
                       std::function<void(HttpSubmitOutcome)> done)>
        submit_embed;
    // Work that needs a model's template or tokenizer but no generation (count_tokens, tokenize,
    // detokenize, apply-template): `work` runs on libuv's pool (it may throw) with the template and
    // tokenizer of model `model_id` (an id resolve_model answered); `done` runs on the loop with its
    // answer, or the exception it threw. Not called back when the client left. `client_template`:
    // the work renders a template the request sent (its cost is the client's choice, so it may hold
    // only part of the pool).
    using ModelWork = std::function<nlohmann::json(const chat::ModelChatTemplate&, const Tokenizer&)>;
    std::function<void(uint64_t conn_id, const std::string& model_id, ModelWork work, bool client_template,
                       std::function<bool()> still_wanted,
                       std::function<void(nlohmann::json answer, std::exception_ptr error)> done)>
        with_model;
    // Every model this server can serve, the default first.
    std::function<std::vector<HttpModelStatus>()> models;
    // The model `name` names, by the rules resolve_model applies ("" = the default), without
    // loading it; false and the not_found error (listing the served names) when none matches.
    std::function<bool(const std::string& name, HttpModelStatus& found, proto::ProtocolError& error)> find_model;
    // The complete catalogue entry of model `name` ("" = the default), loading it first when it is
    // not loaded (`done` then runs later, on the loop thread, unless `still_wanted` says the client
    // left). `keep_alive` (seconds, Ollama's semantics) applies from this request on. On failure the
    // entry is null and the error says why: not_found (no such model; the message lists the served
    // names), model_load_failed (the file could not be loaded), overloaded (the loaded models are
    // all busy at --max-loaded-models), shutting_down.
    using ResolvedModel = std::function<void(std::shared_ptr<const http::ModelCatalogue> entry, proto::ProtocolError error)>;
    std::function<void(const std::string& name, std::optional<double> keep_alive, std::function<bool()> still_wanted,
                       ResolvedModel done)>
        resolve_model;
    // Unloads model `name` as soon as its running requests finish (Ollama's keep_alive 0 with no
    // prompt); false when it is not loaded.
    std::function<bool(const std::string& name)> unload;
    // Pulls model `name` into the model cache as `vkstream pull` does (Ollama's /api/pull), or joins
    // its pull running already: `progress` runs on the loop thread while it downloads, `done` once,
    // on the loop thread, with the name it is served by from then on, or the error (not_found,
    // invalid_field: no such source; pull_failed; unsupported: no model cache served; shutting_down).
    // A pull goes on when its client leaves.
    using PullDone = std::function<void(const std::string& model, const proto::ProtocolError* error)>;
    std::function<void(const std::string& name, std::function<void(const http::PullProgress&)> progress, PullDone done)>
        pull;
    // Deletes pulled model `name` (Ollama's /api/delete); `done` (loop thread) with null, or the
    // error: not_found, unsupported (a --models-dir file or the pinned --model), overloaded (in use).
    std::function<void(const std::string& name, std::function<void(const proto::ProtocolError* error)> done)> remove;
    std::function<void(uint64_t conn_id)> connection_closed;  // cancel what it owns
    std::function<std::string()> metrics;                     // Prometheus text
    std::function<bool()> serving;                            // false while draining
    std::function<bool(const http::PeerInfo&, std::string& why)> allow_unix_peer;
    // The text of token `id` of model `model` (a generation's logprobs).
    std::function<std::string(const std::string& model, proto::TokenId id)> token_text;
  };

  // The served models come from the backend (models, resolve_model), request by request.
  HttpFrontend(uv_loop_t* loop, HttpFrontendOptions options, Backend backend);
  ~HttpFrontend();
  HttpFrontend(const HttpFrontend&) = delete;
  HttpFrontend& operator=(const HttpFrontend&) = delete;

  // Listens on every --http endpoint, and adopts the socket-activated "http" descriptor when given;
  // or, when `handed` is not empty, adopts those instead (the same endpoints, already listening:
  // server/http_loading.h). Throws vks::Error: a non-loopback address without an API key, bind failures.
  void start(std::optional<int> activated_fd, std::vector<http::HandedListener> handed = {});
  std::vector<std::string> addresses() const { return server_->addresses(); }

  // A wire event of a generation an HTTP client submitted (the one the other transports get).
  void on_event(const proto::StreamEvent& ev);
  // How an embed an HTTP client submitted ended: its answer, or the error the msgpack transports
  // answer with.
  using EmbedResult = std::variant<proto::EmbedAnswer, proto::ProtocolError>;
  void on_embed_result(const std::string& id, const EmbedResult& result);

  void stop_accepting() { server_->stop_accepting(); }
  void close_all(bool flush) { server_->close_all(flush); }
  size_t connection_count() const { return server_->connection_count(); }
  size_t live_generations() const { return generations_.size(); }

 private:
  // A request's resolved model: what the handler of its API runs with once the model is loaded.
  // `body` is the request's (its "model" renamed to the entry's id); `c` is still the same exchange.
  using Resolved = std::function<void(http::HttpConnection& c, http::JsonBody& body, const http::ModelCatalogue& entry,
                                      const http::ModelChoice& choice)>;

  void handle(http::HttpConnection& c, http::HttpRequest& r);
  void on_closed(http::HttpConnection& c);
  bool authorized(const http::HttpRequest& r) const;
  void route(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id);
  void completions(http::HttpConnection& c, http::HttpRequest& r);
  void ollama_generate(http::HttpConnection& c, http::HttpRequest& r);
  void chat_completions(http::HttpConnection& c, http::HttpRequest& r);
  void ollama_chat(http::HttpConnection& c, http::HttpRequest& r);
  void anthropic_messages(http::HttpConnection& c, http::HttpRequest& r);
  void openai_responses(http::HttpConnection& c, http::HttpRequest& r);
  void embeddings(http::HttpConnection& c, http::HttpRequest& r, http::EmbedApi api);
  void count_tokens(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id);
  void tokenize(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id);
  void detokenize(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id);
  void apply_template(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id);
  // The listings: every servable model, the loaded ones (/api/ps), one by name.
  void list_models(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id);
  void show_model(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id);
  // Ollama's model store: POST /api/pull (NDJSON progress unless stream is false), DELETE /api/delete.
  void pull_model(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id);
  void delete_model(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id);
  std::vector<HttpModelStatus> served_models() const;
  // Ollama's keep_alive 0 without a prompt: unloads the named model (loaded or not), answering
  // done_reason "unload" in /api/generate's or /api/chat's shape.
  void unload_model(http::HttpConnection& c, const std::string& request_id, const std::string& name, bool chat);
  // The listing of the model `name` names (Backend::find_model), or nullopt with its 404 sent.
  std::optional<HttpModelStatus> find_model(http::HttpConnection& c, bool ollama, const std::string& name,
                                            const std::string& request_id);

  // The request's JSON body (Ollama's surfaces take any media type), or null once its failure is answered.
  std::shared_ptr<http::JsonBody> read_body(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id,
                                            bool ollama);
  // The body's model and keep_alive, or nullopt once the 400 is answered.
  std::optional<http::ModelChoice> read_choice(http::HttpConnection& c, const http::JsonBody& body,
                                               const std::string& request_id, bool ollama);
  // Resolves choice.name through Backend::resolve_model (loading it when needed), then runs `then`
  // on the loop, unless the client left meanwhile; a failure is answered in the API's shape.
  void resolve(http::HttpConnection& c, const std::string& request_id, bool ollama, std::shared_ptr<http::JsonBody> body,
               http::ModelChoice choice, Resolved then);
  // The API function's parts as one: body, choice, resolve.
  void with_resolved(http::HttpConnection& c, http::HttpRequest& r, const std::string& request_id, bool ollama,
                     Resolved then);
  // The connection, while it is still on `exchange`; null when the client left.
  http::HttpConnection* live(uint64_t conn_id, uint64_t exchange) const;

  // Runs `work` through Backend::with_model on model `model_id` and answers its JSON (200), or
  // `failed` when the work set it (a template refusing the conversation: names maps its field to
  // the API's), or 500.
  void run_model_work(http::HttpConnection& c, const std::string& request_id, const std::string& model_id,
                      Backend::ModelWork work, std::shared_ptr<std::optional<proto::ProtocolError>> failed,
                      const std::map<std::string, std::string>& names, bool client_template = false);
  // Submits the wire request (generate, or chat for the chat APIs); on success registers the
  // generation and starts its answer. `client_id`: the request's valid x-request-id, or "".
  // `rendered`: a later choice's chat takes its first choice's rendering.
  void submit(http::HttpConnection& c, const std::string& client_id, http::Generation g, nlohmann::json wire,
              const std::map<std::string, std::string>& names, std::shared_ptr<const RenderedChat> rendered = nullptr);
  void submitted(uint64_t conn_id, uint64_t exchange, http::Generation g, const HttpSubmitOutcome& outcome,
                 const std::map<std::string, std::string>& names);
  // OpenAI's n: submit for n = 1; for more, choice 0 through submit now and the other choices
  // through it once choice 0 has its first token (submit_later_choices; http/choice_group.h).
  void submit_choices(http::HttpConnection& c, const std::string& client_id, http::Generation g, nlohmann::json wire,
                      const std::map<std::string, std::string>& names, int32_t n);
  void submit_later_choices(const std::shared_ptr<http::ChoiceGroup>& group);
  // One choice of an n > 1 answer finished: its end goes out (streamed) or is kept, and the answer
  // once every choice finished.
  void finish_choice(http::HttpConnection& c, http::Generation& g, const proto::StreamEvent& finished);
  // One choice failed (its submission or its generation): the answer is that error, and the
  // connection closes after it, which cancels the other choices as a hang-up does.
  void fail_choices(http::HttpConnection& c, const std::shared_ptr<http::ChoiceGroup>& group, bool stream,
                    const http::ApiError& error);
  // The mapped request, or nullopt once the mapper's error is answered.
  template <class Request>
  std::optional<Request> mapped(http::HttpConnection& c, const std::string& request_id, bool ollama,
                                std::variant<Request, http::ApiError> result);
  // A chat request (wire as a surface mapped it) rendered by model `model_id`'s template off the
  // loop: answers answer(rendered, prompt text) or the template's refusal.
  void answer_rendered(http::HttpConnection& c, const std::string& request_id, const std::string& model_id,
                       nlohmann::json wire, const std::map<std::string, std::string>& names,
                       std::function<nlohmann::json(const GenerateRequest&, std::string)> answer);
  void send_error(http::HttpConnection& c, bool ollama, const http::ApiError& e, const std::string& request_id);
  void send_json(http::HttpConnection& c, int status, const nlohmann::json& body, const std::string& request_id);
  std::string fresh_request_id();
  // One token event rendered for the generation's API ("" when nothing is to be sent), or added
  // to its whole answer when it is not streamed.
  std::string render_tokens(http::Generation& g, const proto::StreamEvent& ev);
  void finish(http::HttpConnection& c, http::Generation& g, const proto::StreamEvent& finished);
  void answer_embed(http::HttpConnection& c, const http::Generation& g, const EmbedResult& result);

  HttpFrontendOptions options_;
  Backend backend_;
  std::unique_ptr<http::HttpServer> server_;
  std::unordered_map<std::string, http::Generation> generations_;  // by request id
  std::mt19937_64 rng_{std::random_device{}()};
  // The allowed Origin of the request being answered (CORS); a generation keeps its own.
  std::optional<std::string> cors_origin_;
};

// The HTTP catalogue entry of a servable model: its name, size and mtime as the model catalogue
// lists them, what it says of itself (`info`) and its file type.
http::ModelCatalogue make_model_catalogue(const store::CatalogModel& file, const proto::ModelInfo& info,
                                          const std::string& file_type);

}  // namespace vks::server
