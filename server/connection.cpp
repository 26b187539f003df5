#include "server/connection.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <memory>

#include "protocol/responses.h"

namespace vks::server {

struct Connection::WriteReq {
  uv_write_t req{};
  std::string bytes;
  Connection* connection = nullptr;
};

Connection::Connection(uint64_t id, const proto::ProtocolLimits& limits, FrameHandler on_frame,
                       ClosedHandler on_closed, FramingErrorHandler on_framing_error)
    : id_(id),
      limits_(limits),
      decoder_(limits.max_frame_bytes),
      on_frame_(std::move(on_frame)),
      on_closed_(std::move(on_closed)),
      on_framing_error_(std::move(on_framing_error)) {
  pipe_.data = this;
}

void Connection::start_reading() {
  const int rc = uv_read_start(stream(), &Connection::on_alloc, &Connection::on_read);
  if (rc != 0) {
    spdlog::warn("connection {}: uv_read_start: {}", id_, uv_strerror(rc));
    close_now();
  }
}

void Connection::on_alloc(uv_handle_t* handle, size_t /*suggested*/, uv_buf_t* buf) {
  auto* self = static_cast<Connection*>(handle->data);
  buf->base = self->read_buf_.data();
  buf->len = self->read_buf_.size();
}

void Connection::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* self = static_cast<Connection*>(stream->data);
  try {
    if (nread < 0) {
      if (nread != UV_EOF) spdlog::debug("connection {}: read: {}", self->id_, uv_strerror(static_cast<int>(nread)));
      if (self->decoder_.buffered_bytes() > 0) {
        spdlog::info("connection {}: closed in the middle of a frame ({} bytes dropped)", self->id_,
                     self->decoder_.buffered_bytes());
      }
      self->close_now();
      return;
    }
    if (nread > 0) self->handle_bytes(std::string_view(buf->base, static_cast<size_t>(nread)));
  } catch (const std::exception& e) {
    spdlog::error("connection {}: {}; closing it", self->id_, e.what());
    self->close_now();
  } catch (...) {
    spdlog::error("connection {}: unknown exception; closing it", self->id_);
    self->close_now();
  }
}

void Connection::handle_bytes(std::string_view bytes) {
  if (closing_ || decoder_.failed()) return;
  const bool ok = decoder_.feed(bytes);
  // Frames that were complete before a bad header in the same read are requests like any other:
  // they are handled (and answered) first, in order.
  std::string payload;
  while (!closing_ && decoder_.next(payload)) on_frame_(*this, payload);
  if (ok || closing_) return;
  // frame_too_large (or an empty frame): the stream cannot be resynchronised.
  spdlog::info("connection {}: {}; closing it", id_, decoder_.error().message);
  uv_read_stop(stream());
  if (on_framing_error_) {
    on_framing_error_(*this, decoder_.error());
  } else {
    fail(decoder_.error());
  }
}

void Connection::fail(const proto::ProtocolError& error) {
  send_unbounded(proto::encode_error(error));
  close_after_flush();
}

bool Connection::send(std::string_view payload) {
  if (closing_) return false;
  if (queued_bytes_ + payload.size() + proto::kFrameHeaderBytes > limits_.max_output_bytes) {
    spdlog::warn("connection {}: {} bytes of output queued, above max_output_bytes {}: slow consumer, "
                 "closing it", id_, queued_bytes_, limits_.max_output_bytes);
    send_unbounded(proto::encode_error(proto::make_error(
        proto::WireError::kSlowConsumer, "client did not read its stream fast enough; "
        "the connection is closed and its non-detached requests are cancelled")));
    close_after_flush();
    return false;
  }
  write_frame(payload);
  return true;
}

void Connection::send_unbounded(std::string_view payload) {
  if (closing_) return;
  write_frame(payload);
}

void Connection::write_frame(std::string_view payload) {
  auto req = std::make_unique<WriteReq>();
  proto::append_frame(req->bytes, payload);
  req->connection = this;
  req->req.data = req.get();
  uv_buf_t buf = uv_buf_init(req->bytes.data(), static_cast<unsigned>(req->bytes.size()));
  const int rc = uv_write(&req->req, stream(), &buf, 1, &Connection::on_write);
  if (rc != 0) {
    spdlog::debug("connection {}: uv_write: {}", id_, uv_strerror(rc));
    close_now();
    return;
  }
  queued_bytes_ += req->bytes.size();
  req.release();  // freed in on_write
}

void Connection::on_write(uv_write_t* req, int status) {
  std::unique_ptr<WriteReq> owned(static_cast<WriteReq*>(req->data));
  Connection* self = owned->connection;
  self->queued_bytes_ -= owned->bytes.size();
  if (status != 0 && status != UV_ECANCELED) {
    spdlog::debug("connection {}: write failed: {}", self->id_, uv_strerror(status));
    self->close_now();
  }
}

void Connection::close_after_flush() {
  if (closing_) return;
  closing_ = true;
  uv_read_stop(stream());
  if (uv_shutdown(&shutdown_req_, stream(), &Connection::on_shutdown) == 0) {
    shutdown_req_.data = this;
  } else {
    uv_close(reinterpret_cast<uv_handle_t*>(&pipe_), &Connection::on_close);
  }
}

void Connection::on_shutdown(uv_shutdown_t* req, int /*status*/) {
  auto* self = static_cast<Connection*>(req->data);
  auto* handle = reinterpret_cast<uv_handle_t*>(&self->pipe_);
  if (!uv_is_closing(handle)) uv_close(handle, &Connection::on_close);
}

void Connection::close_now() {
  closing_ = true;
  auto* handle = reinterpret_cast<uv_handle_t*>(&pipe_);
  if (!uv_is_closing(handle)) uv_close(handle, &Connection::on_close);
}

void Connection::on_close(uv_handle_t* handle) {
  auto* self = static_cast<Connection*>(handle->data);
  try {
    ClosedHandler handler = std::move(self->on_closed_);
    handler(*self);  // the owner deletes *self here
  } catch (const std::exception& e) {
    spdlog::error("connection close handler: {}", e.what());
  } catch (...) {
    spdlog::error("connection close handler: unknown exception");
  }
}

}  // namespace vks::server
