// HttpFrontend: Ollama's model store endpoints (POST /api/pull, DELETE /api/delete) through
// Backend::pull and Backend::remove. A pull's answer comes later, from the loop thread: every
// callback finds its connection again by id and exchange, and does nothing when the client left
// (the pull itself goes on: the next request for it joins or finds it done).
#include <spdlog/spdlog.h>

#include "server/http/cors.h"
#include "server/http/json_error.h"
#include "server/http_frontend.h"

namespace vks::server {

using http::ApiError;
using http::HttpConnection;
using http::HttpRequest;

void HttpFrontend::pull_model(HttpConnection& c, HttpRequest& r, const std::string& request_id) {
  std::shared_ptr<http::JsonBody> body = read_body(c, r, request_id, true);
  if (!body) return;
  auto call = http::read_pull_call(*body);
  if (auto* e = std::get_if<ApiError>(&call)) return send_error(c, true, *e, request_id);
  const http::PullCall pull = std::get<http::PullCall>(call);
  if (!backend_.pull) return send_error(c, true, ApiError{501, "this server cannot pull models", "unsupported", {}, 0}, request_id);
  const uint64_t conn_id = c.id();
  const uint64_t exchange = c.exchange();
  const std::optional<std::string> origin = cors_origin_;
  // A pull refused at once (not a source, no model cache, shutting down) is answered with its
  // status; one that started streams from "pulling manifest" on (its failures as an error line).
  auto streaming = std::make_shared<bool>(false);
  auto progress = [this, conn_id, exchange, streaming](const http::PullProgress& p) {
    if (!*streaming || (p.digest.empty() && p.file.empty())) return;  // nothing planned yet
    if (HttpConnection* now = live(conn_id, exchange)) now->send_chunk(http::ndjson_line(http::ollama_pull_progress(p)));
  };
  backend_.pull(pull.name, std::move(progress),
                [this, conn_id, exchange, request_id, origin, streaming](const std::string& model,
                                                                         const proto::ProtocolError* error) {
                  // Maybe from a libuv callback: nothing may escape.
                  try {
                    HttpConnection* now = live(conn_id, exchange);
                    if (now == nullptr) return;  // the client left; the model is pulled all the same
                    cors_origin_ = origin;
                    if (!*streaming) {
                      if (error != nullptr) return send_error(*now, true, http::ollama_store_error(*error), request_id);
                      return send_json(*now, 200, nlohmann::json{{"status", "success"}}, request_id);
                    }
                    if (error != nullptr) {
                      now->send_chunk(http::ndjson_line(nlohmann::json{{"error", error->message}}));
                    } else if (!now->send_chunk(http::ollama_pull_success_lines())) {
                      return;
                    }
                    now->end_stream();
                    spdlog::debug("http {}: pull answered ({})", request_id, error != nullptr ? error->message : model);
                  } catch (const std::exception& e) {
                    spdlog::error("http: answering {}: {}", request_id, e.what());
                  }
                });
  if (!pull.stream || !c.answering() || c.exchange() != exchange) return;  // answered already, or later in one piece
  *streaming = true;
  http::HeaderList headers = {{"x-request-id", request_id}, {"Cache-Control", "no-cache"}};
  http::add_cors_headers(headers, origin);
  if (c.begin_stream(200, "application/x-ndjson", headers)) {
    c.send_chunk(http::ndjson_line(http::ollama_pull_status("pulling manifest")));
  }
}

void HttpFrontend::delete_model(HttpConnection& c, HttpRequest& r, const std::string& request_id) {
  std::shared_ptr<http::JsonBody> body = read_body(c, r, request_id, true);
  if (!body) return;
  auto call = http::read_pull_call(*body);
  if (auto* e = std::get_if<ApiError>(&call)) return send_error(c, true, *e, request_id);
  if (!backend_.remove) {
    return send_error(c, true, ApiError{501, "this server cannot delete models", "unsupported", {}, 0}, request_id);
  }
  const uint64_t conn_id = c.id();
  const uint64_t exchange = c.exchange();
  backend_.remove(std::get<http::PullCall>(call).name,
                  [this, conn_id, exchange, request_id, origin = cors_origin_](const proto::ProtocolError* error) {
                    try {
                      HttpConnection* now = live(conn_id, exchange);
                      if (now == nullptr) return;
                      cors_origin_ = origin;
                      if (error != nullptr) return send_error(*now, true, http::ollama_store_error(*error), request_id);
                      http::HttpResponse resp;  // Ollama answers 200 with no body
                      resp.status = 200;
                      resp.headers.emplace_back("x-request-id", request_id);
                      http::add_cors_headers(resp.headers, cors_origin_);
                      now->respond(resp);
                    } catch (const std::exception& e) {
                      spdlog::error("http: answering {}: {}", request_id, e.what());
                    }
                  });
}

}  // namespace vks::server
