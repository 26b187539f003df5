#include "server/http/http_connection.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <memory>

#include "server/http/json_error.h"

namespace vks::http {

namespace {
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr uint64_t kMaxLingerBytes = 1u << 20;


// Every answer carries an x-request-id; answers that belong to no request get a fresh one.
HeaderList with_request_id(const HeaderList& headers) {
  for (const auto& [name, value] : headers) {
    if (name == "x-request-id") return headers;
  }
  HeaderList out = headers;
  out.emplace_back("x-request-id", random_request_id());
  return out;
}

}  // namespace

struct HttpConnection::WriteReq {
  uv_write_t req{};
  std::string bytes;
  HttpConnection* connection = nullptr;
};

HttpConnection::HttpConnection(uint64_t id, bool is_tcp, const HttpLimits& limits, RequestHandler on_request,
                               ClosedHandler on_closed)
    : is_tcp_(is_tcp),
      id_(id),
      limits_(limits),
      parser_(limits),
      on_request_(std::move(on_request)),
      on_closed_(std::move(on_closed)) {
  handle_.handle.data = this;
}

void HttpConnection::start_reading() {
  const int rc = uv_read_start(stream(), &HttpConnection::on_alloc, &HttpConnection::on_read);
  if (rc != 0) {
    spdlog::warn("http connection {}: uv_read_start: {}", id_, uv_strerror(rc));
    close_now();
    return;
  }
  reading_ = true;
}

void HttpConnection::on_alloc(uv_handle_t* handle, size_t /*suggested*/, uv_buf_t* buf) {
  auto* self = static_cast<HttpConnection*>(handle->data);
  buf->base = self->read_buf_.data();
  buf->len = self->read_buf_.size();
}

void HttpConnection::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* self = static_cast<HttpConnection*>(stream->data);
  try {
    if (nread < 0) {
      // The peer is gone (or half-closed): whatever it was waiting for is cancelled by on_closed.
      if (nread != UV_EOF) spdlog::debug("http connection {}: read: {}", self->id_, uv_strerror(static_cast<int>(nread)));
      self->close_now();
      return;
    }
    if (nread == 0) return;
    if (self->lingering_) {
      self->lingered_bytes_ += static_cast<uint64_t>(nread);
      if (self->lingered_bytes_ > kMaxLingerBytes) self->close_now();
      return;
    }
    self->handle_bytes(std::string_view(buf->base, static_cast<size_t>(nread)));
  } catch (const std::exception& e) {
    spdlog::error("http connection {}: {}; closing it", self->id_, e.what());
    self->close_now();
  } catch (...) {
    spdlog::error("http connection {}: unknown exception; closing it", self->id_);
    self->close_now();
  }
}

void HttpConnection::handle_bytes(std::string_view bytes) {
  if (closing_) return;
  last_activity_ = std::chrono::steady_clock::now();
  // The first byte of a request starts its clock; later bytes do not reset it (a request dribbled
  // a byte a second would otherwise never time out). While an answer is being written, bytes of
  // the next (pipelined) request wait: its clock starts when that answer is done.
  if (!active_ && !parser_.mid_request()) request_started_ = last_activity_;
  parser_.feed(bytes);
  if (active_) {
    // Read ahead of the current answer only so far; the rest waits in the socket.
    if (parser_.stashed_bytes() > limits_.max_stashed_bytes && reading_) {
      uv_read_stop(stream());
      reading_ = false;
    }
    return;
  }
  dispatch_ready();
}

void HttpConnection::dispatch_ready() {
  if (dispatching_ || closing_ || active_) return;
  dispatching_ = true;
  while (!closing_ && !active_) {
    std::optional<HttpRequest> request = parser_.next();
    if (!request) break;
    active_ = true;
    ++exchange_;
    keep_alive_ = request->keep_alive;
    http10_ = request->version_minor == 0;
    head_only_ = request->method == "HEAD";
    streaming_ = false;
    on_request_(*this, *request);  // may answer at once (then active_ is false again)
  }
  if (!closing_ && !active_) {
    if (parser_.failure()) {
      fail_stream(*parser_.failure());
    } else if (parser_.wants_continue()) {
      write_raw("HTTP/1.1 100 Continue\r\n\r\n");
      parser_.continue_sent();
    }
  }
  dispatching_ = false;
}

void HttpConnection::fail_stream(const ParseFailure& failure) {
  spdlog::debug("http connection {}: {} ({})", id_, failure.status, failure.message);
  const std::string body = openai_error_body(failure.status, failure.message, failure.code);
  std::string bytes = serialize_head(failure.status, "application/json", {{"x-request-id", random_request_id()}},
                                     static_cast<int64_t>(body.size()), /*keep_alive=*/false, /*http10=*/false);
  bytes += body;
  write_raw(std::move(bytes));
  close_after_flush(/*linger=*/true);
}

void HttpConnection::finish_exchange() {
  active_ = false;
  streaming_ = false;
  if (closing_) return;
  if (!keep_alive_) {
    close_after_flush(/*linger=*/true);
    return;
  }
  last_activity_ = std::chrono::steady_clock::now();
  request_started_ = last_activity_;
  if (!reading_) start_reading();
  dispatch_ready();
}

bool HttpConnection::over_output_bound(size_t more) {
  // The bound is on output the client has not read: a write into an empty queue goes whatever its
  // size (a non-streamed answer larger than the bound is not a slow reader's fault).
  if (queued_bytes_ == 0 || queued_bytes_ + more <= limits_.max_output_bytes) return false;
  spdlog::warn("http connection {} ({}): {} bytes of output unread and {} more to queue, above the limit of {}: "
               "slow reader, closing it", id_, peer_.address, queued_bytes_, more, limits_.max_output_bytes);
  close_now();
  return true;
}

void HttpConnection::respond(const HttpResponse& response) {
  if (!active_ || streaming_ || closing_) return;
  if (response.close_connection) keep_alive_ = false;
  std::string bytes = serialize_head(response.status, response.content_type, with_request_id(response.headers),
                                     static_cast<int64_t>(response.body.size()), keep_alive_, http10_);
  if (!head_only_) bytes += response.body;
  if (over_output_bound(bytes.size())) return;
  write_raw(std::move(bytes));
  finish_exchange();
}

void HttpConnection::respond_error(int status, std::string_view message, std::string_view code,
                                   const HeaderList& headers) {
  HttpResponse r;
  r.status = status;
  r.headers = headers;
  r.body = openai_error_body(status, message, code);
  respond(r);
}

bool HttpConnection::begin_stream(int status, std::string_view content_type, const HeaderList& headers) {
  if (!active_ || streaming_ || closing_) return false;
  if (http10_) keep_alive_ = false;  // no chunked encoding: the body ends when the connection does
  std::string head = serialize_head(status, content_type, with_request_id(headers), -1, keep_alive_, http10_);
  if (over_output_bound(head.size())) return false;
  write_raw(std::move(head));
  streaming_ = true;
  return true;
}

bool HttpConnection::send_chunk(std::string_view data) {
  if (!active_ || !streaming_ || closing_) return false;
  if (data.empty() || head_only_) return true;
  std::string bytes;
  if (http10_) {
    bytes.assign(data);
  } else {
    bytes.reserve(data.size() + 16);
    append_chunk(bytes, data);
  }
  if (over_output_bound(bytes.size())) return false;
  write_raw(std::move(bytes));
  return true;
}

void HttpConnection::end_stream() {
  if (!active_ || !streaming_ || closing_) return;
  if (!http10_ && !head_only_) write_raw(std::string(kLastChunk));
  finish_exchange();
}

void HttpConnection::refuse(int status, std::string_view message, std::string_view code) {
  const std::string body = openai_error_body(status, message, code);
  std::string bytes = serialize_head(status, "application/json", {{"x-request-id", random_request_id()}},
                                     static_cast<int64_t>(body.size()), /*keep_alive=*/false, /*http10=*/false);
  bytes += body;
  write_raw(std::move(bytes));
  close_after_flush(/*linger=*/false);
}

void HttpConnection::write_raw(std::string bytes) {
  if (closing_ || bytes.empty()) return;
  auto req = std::make_unique<WriteReq>();
  req->bytes = std::move(bytes);
  req->connection = this;
  req->req.data = req.get();
  uv_buf_t buf = uv_buf_init(req->bytes.data(), static_cast<unsigned>(req->bytes.size()));
  const int rc = uv_write(&req->req, stream(), &buf, 1, &HttpConnection::on_write);
  if (rc != 0) {
    spdlog::debug("http connection {}: uv_write: {}", id_, uv_strerror(rc));
    close_now();
    return;
  }
  queued_bytes_ += req->bytes.size();
  req.release();  // freed in on_write
}

void HttpConnection::on_write(uv_write_t* req, int status) {
  std::unique_ptr<WriteReq> owned(static_cast<WriteReq*>(req->data));
  HttpConnection* self = owned->connection;
  self->queued_bytes_ -= owned->bytes.size();
  if (status != 0 && status != UV_ECANCELED) {
    spdlog::debug("http connection {}: write failed: {}", self->id_, uv_strerror(status));
    self->close_now();
  }
}

void HttpConnection::close_after_flush(bool linger) {
  if (closing_) return;
  closing_ = true;
  lingering_ = linger && reading_;
  last_activity_ = std::chrono::steady_clock::now();
  if (!lingering_ && reading_) {
    uv_read_stop(stream());
    reading_ = false;
  }
  if (uv_shutdown(&shutdown_req_, stream(), &HttpConnection::on_shutdown) == 0) {
    shutdown_req_.data = this;
  } else {
    uv_close(handle(), &HttpConnection::on_close);
  }
}

void HttpConnection::on_shutdown(uv_shutdown_t* req, int status) {
  auto* self = static_cast<HttpConnection*>(req->data);
  // Lingering: the peer's EOF (on_read) or the housekeeping deadline closes the handle.
  if (self->lingering_ && status == 0) return;
  if (!uv_is_closing(self->handle())) uv_close(self->handle(), &HttpConnection::on_close);
}

void HttpConnection::close_now() {
  closing_ = true;
  if (!uv_is_closing(handle())) uv_close(handle(), &HttpConnection::on_close);
}

bool HttpConnection::expire(std::chrono::steady_clock::time_point now) {
  if (uv_is_closing(handle())) return false;
  const auto idle = now - last_activity_;
  if (closing_) {
    if (lingering_ && idle > kLingerTime) close_now();
    return false;
  }
  if (active_) return false;
  if (parser_.mid_request()) {
    if (now - request_started_ > std::chrono::milliseconds(limits_.request_timeout_ms)) {
      fail_stream(ParseFailure{408, "request_timeout",
                               "the request was not complete after " +
                                   std::to_string(limits_.request_timeout_ms) + " ms"});
      return true;
    }
    return false;
  }
  if (idle > std::chrono::milliseconds(limits_.keep_alive_idle_ms)) {
    close_now();
    return true;
  }
  return false;
}

void HttpConnection::on_close(uv_handle_t* handle) {
  auto* self = static_cast<HttpConnection*>(handle->data);
  try {
    ClosedHandler handler = std::move(self->on_closed_);
    handler(*self);  // the owner deletes *self here
  } catch (const std::exception& e) {
    spdlog::error("http connection close handler: {}", e.what());
  } catch (...) {
    spdlog::error("http connection close handler: unknown exception");
  }
}

}  // namespace vks::http
