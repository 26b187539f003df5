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

void Connection::init(uv_loop_t* loop) {
  uv_pipe_init(loop, &pipe_, 0);
  uv_idle_init(loop, &flush_idle_);
  pipe_.data = this;
  flush_idle_.data = this;
  open_handles_ = 2;
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
    drop_slow_consumer(payload.size() + proto::kFrameHeaderBytes);
    return false;
  }
  queue_frame(payload);
  return true;
}

void Connection::send_unbounded(std::string_view payload) {
  if (closing_) return;
  queue_frame(payload);
}

void Connection::drop_slow_consumer(size_t more) {
  // Both figures: the queued bytes alone are under the limit (the frame that crosses it is not queued).
  spdlog::warn("connection {}: {} bytes of output queued and a frame of {} more, above max_output_bytes {}: "
               "slow consumer, closing it at once", id_, queued_bytes_, more, limits_.max_output_bytes);
  // Like redis's client output buffer hard limit: no flush (a client that does not read would never
  // take it), the queued output is freed, the close hook cancels the non-detached requests now.
  // The error frame can only go out at a frame boundary: when no write is in flight.
  queued_bytes_ -= pending_.size();
  pending_ = std::string();
  if (writes_in_flight_ == 0) {
    std::string frame;
    proto::append_frame(frame, proto::encode_error(proto::make_error(
        proto::WireError::kSlowConsumer, "client did not read its stream fast enough; "
        "the connection is closed and its non-detached requests are cancelled")));
    uv_buf_t buf = uv_buf_init(frame.data(), static_cast<unsigned>(frame.size()));
    (void)uv_try_write(stream(), &buf, 1);  // best effort; the close follows either way
  }
  close_now();
}

void Connection::queue_frame(std::string_view payload) {
  proto::append_frame(pending_, payload);
  queued_bytes_ += payload.size() + proto::kFrameHeaderBytes;
  if (!flush_scheduled_) {
    flush_scheduled_ = true;
    uv_idle_start(&flush_idle_, &Connection::on_flush);
  }
}

void Connection::on_flush(uv_idle_t* idle) {
  auto* self = static_cast<Connection*>(idle->data);
  uv_idle_stop(idle);
  self->flush_scheduled_ = false;
  self->flush();
}

void Connection::flush() {
  if (pending_.empty() || uv_is_closing(reinterpret_cast<uv_handle_t*>(&pipe_))) return;
  auto req = std::make_unique<WriteReq>();
  req->bytes = std::move(pending_);
  pending_ = std::string();
  req->connection = this;
  req->req.data = req.get();
  uv_buf_t buf = uv_buf_init(req->bytes.data(), static_cast<unsigned>(req->bytes.size()));
  const int rc = uv_write(&req->req, stream(), &buf, 1, &Connection::on_write);
  if (rc != 0) {
    spdlog::debug("connection {}: uv_write: {}", id_, uv_strerror(rc));
    queued_bytes_ -= req->bytes.size();
    close_now();
    return;
  }
  ++writes_in_flight_;
  req.release();  // freed in on_write
}

void Connection::on_write(uv_write_t* req, int status) {
  std::unique_ptr<WriteReq> owned(static_cast<WriteReq*>(req->data));
  Connection* self = owned->connection;
  self->queued_bytes_ -= owned->bytes.size();
  --self->writes_in_flight_;
  if (status != 0 && status != UV_ECANCELED) {
    spdlog::debug("connection {}: write failed: {}", self->id_, uv_strerror(status));
    self->close_now();
  }
}

void Connection::close_after_flush() {
  if (closing_) return;
  closing_ = true;
  uv_read_stop(stream());
  flush();
  uv_idle_stop(&flush_idle_);
  auto* idle = reinterpret_cast<uv_handle_t*>(&flush_idle_);
  if (!uv_is_closing(idle)) uv_close(idle, &Connection::on_close);
  if (uv_is_closing(reinterpret_cast<uv_handle_t*>(&pipe_))) return;  // flush() failed and closed it
  if (uv_shutdown(&shutdown_req_, stream(), &Connection::on_shutdown) == 0) {
    shutdown_req_.data = this;
  } else {
    close_handles();
  }
}

void Connection::on_shutdown(uv_shutdown_t* req, int /*status*/) {
  static_cast<Connection*>(req->data)->close_handles();
}

void Connection::close_now() {
  closing_ = true;
  queued_bytes_ -= pending_.size();
  pending_ = std::string();
  close_handles();
}

void Connection::close_handles() {
  for (auto* handle : {reinterpret_cast<uv_handle_t*>(&flush_idle_), reinterpret_cast<uv_handle_t*>(&pipe_)}) {
    if (!uv_is_closing(handle)) uv_close(handle, &Connection::on_close);
  }
}

void Connection::on_close(uv_handle_t* handle) {
  auto* self = static_cast<Connection*>(handle->data);
  if (--self->open_handles_ > 0) return;
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
