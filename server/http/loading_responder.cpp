#include "server/http/loading_responder.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

#include "engine/common/error.h"
#include "server/http/json_error.h"

namespace vks::http {

namespace {

// Answers already written get this long to reach their clients before the connection is cut.
constexpr auto kFlushTime = std::chrono::milliseconds(250);

template <class Handle>
uv_handle_t* as_handle(Handle* h) {
  return reinterpret_cast<uv_handle_t*>(h);
}

void release(std::vector<HandedListener>& listeners) {
  for (const HandedListener& h : listeners) {
    if (h.fd >= 0) ::close(h.fd);
    if (!h.unlink_path.empty()) ::unlink(h.unlink_path.c_str());
  }
  listeners.clear();
}

}  // namespace

HttpResponse loading_answer(const HttpRequest& request) {
  HttpResponse resp;
  resp.status = 503;
  resp.close_connection = true;  // the next request may well find the real front end
  resp.headers.emplace_back("Retry-After", "1");
  if (request.path == "/health") {
    resp.body = R"({"status":"loading"})";
  } else if (request.path.rfind("/api/", 0) == 0) {
    resp.body = ollama_error_body("Loading model");
  } else {
    resp.body = openai_error_body(503, "Loading model", "model_loading");
  }
  return resp;
}

LoadingResponder::LoadingResponder(LoadingResponderOptions options) {
  if (uv_loop_init(&loop_) != 0) throw Error(ErrorCode::kInternal, "uv_loop_init failed");
  loop_open_ = true;
  uv_async_init(&loop_, &stop_async_, &LoadingResponder::on_stop);
  uv_timer_init(&loop_, &final_timer_);
  stop_async_.data = final_timer_.data = this;
  try {
    HttpServer::Hooks hooks;
    hooks.on_request = [](HttpConnection& c, HttpRequest& r) { c.respond(loading_answer(r)); };
    hooks.allow_peer = std::move(options.allow_peer);
    server_ = std::make_unique<HttpServer>(&loop_, options.limits, std::move(hooks));
    if (options.activated_fd) server_->adopt(*options.activated_fd);
    for (const HttpEndpoint& e : options.endpoints) server_->listen(e, options.unix_mode);
    addresses_ = server_->addresses();
    tcp_port_ = server_->tcp_port();
    handed_ = server_->hand_over_listeners();
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });  // every callback catches
  } catch (...) {
    close_handles();
    uv_run(&loop_, UV_RUN_DEFAULT);
    server_.reset();
    uv_loop_close(&loop_);
    loop_open_ = false;
    release(handed_);
    throw;
  }
}

LoadingResponder::~LoadingResponder() {
  stop();
  release(handed_);
}

std::vector<HandedListener> LoadingResponder::hand_over() {
  stop();
  return std::exchange(handed_, {});
}

void LoadingResponder::stop() {
  if (thread_.joinable()) {
    uv_async_send(&stop_async_);
    thread_.join();
  }
  if (!loop_open_) return;
  server_.reset();  // every connection is gone with the handles
  const int rc = uv_loop_close(&loop_);
  if (rc != 0) spdlog::error("loading responder: uv_loop_close: {} (a handle was left open)", uv_strerror(rc));
  loop_open_ = false;
}

void LoadingResponder::close_handles() {
  if (server_) {
    server_->stop_accepting();
    server_->close_all(/*flush=*/false);
  }
  if (!uv_is_closing(as_handle(&stop_async_))) uv_close(as_handle(&stop_async_), nullptr);
  if (!uv_is_closing(as_handle(&final_timer_))) uv_close(as_handle(&final_timer_), nullptr);
}

void LoadingResponder::on_stop(uv_async_t* async) {
  auto* self = static_cast<LoadingResponder*>(async->data);
  try {
    self->server_->stop_accepting();  // closes our descriptors; the handed duplicates keep listening
    // Connections already accepted stay open for kFlushTime: a request still on its way (a client
    // that connected just before the model was ready) gets its 503 "loading" answer, and every answer
    // closes its connection. Closing them at once left such a client with no answer at all.
    uv_close(as_handle(async), nullptr);
    self->final_started_ = std::chrono::steady_clock::now();
    uv_timer_start(&self->final_timer_, &LoadingResponder::on_final_tick, 0, 20);
  } catch (const std::exception& e) {
    spdlog::error("loading responder: stopping: {}", e.what());
    self->close_handles();
  }
}

void LoadingResponder::on_final_tick(uv_timer_t* timer) {
  auto* self = static_cast<LoadingResponder*>(timer->data);
  try {
    if (self->server_->connection_count() == 0) {
      uv_close(as_handle(timer), nullptr);
    } else if (std::chrono::steady_clock::now() - self->final_started_ > kFlushTime) {
      self->server_->close_all(/*flush=*/false);
    }
  } catch (const std::exception& e) {
    spdlog::error("loading responder: closing: {}", e.what());
    self->close_handles();
  }
}

}  // namespace vks::http
