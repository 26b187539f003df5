#pragma once
// One Unix-socket client: length-prefixed msgpack frames in (bounded: the frame size is checked
// from the header before any payload is buffered), frames out (bounded: above max_output_bytes
// queued the client is a slow consumer and is closed at once, as docs/PROTOCOL.md says).
// Outgoing frames are coalesced: every frame queued during one loop iteration goes out in one
// write, from an idle handle (which also keeps the loop from blocking while output is pending).
// Lives on the loop thread. Deleted by its UdsServer from the close callback only.
#include <sys/socket.h>
#include <uv.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "protocol/frame.h"
#include "protocol/limits.h"

namespace vks::server {

class Connection {
 public:
  using FrameHandler = std::function<void(Connection&, std::string& payload)>;
  using ClosedHandler = std::function<void(Connection&)>;
  // A framing error (oversized or zero-length header) after every complete frame before it was
  // handed to the FrameHandler. Reading has stopped. The handler must end with fail(error) once
  // the answers to those frames are queued (some may still be prepared off the loop); when
  // unset, fail(error) runs at once.
  using FramingErrorHandler = std::function<void(Connection&, const proto::ProtocolError&)>;

  Connection(uint64_t id, const proto::ProtocolLimits& limits, FrameHandler on_frame,
             ClosedHandler on_closed, FramingErrorHandler on_framing_error = {});
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&pipe_); }
  uv_pipe_t* pipe() { return &pipe_; }
  uint64_t id() const { return id_; }
  const ucred& peer() const { return peer_; }
  void set_peer(const ucred& peer) { peer_ = peer; }

  // Initialises the pipe and the flush handle on `loop` (before uv_accept).
  void init(uv_loop_t* loop);
  // After init + uv_accept succeeded.
  void start_reading();
  // Queues one frame (header added here). False when the connection is closing, or when the
  // output bound was hit: then the client is a slow consumer and the connection closes at once
  // (queued output dropped; slow_consumer is sent only when it can go out at a frame boundary
  // without waiting), so that the close hook cancels its requests now, not after a flush that a
  // client that does not read would never complete.
  bool send(std::string_view payload);
  // Queues the frame whatever the bound (final small answers before a close).
  void send_unbounded(std::string_view payload);
  // Stops reading, lets queued writes finish, then closes.
  void close_after_flush();
  // Closes at once; queued writes are cancelled and freed.
  void close_now();
  // Sends `error` (no tag: it concerns the connection) and closes after flushing.
  void fail(const proto::ProtocolError& error);
  bool closing() const { return closing_; }
  // Output bytes queued (coalesced and not yet written, plus writes in flight).
  uint64_t queued_bytes() const { return queued_bytes_; }

 private:
  struct WriteReq;
  static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void on_write(uv_write_t* req, int status);
  static void on_shutdown(uv_shutdown_t* req, int status);
  static void on_close(uv_handle_t* handle);
  static void on_flush(uv_idle_t* idle);
  void handle_bytes(std::string_view bytes);
  void queue_frame(std::string_view payload);
  void flush();
  void drop_slow_consumer(size_t more);  // `more`: the frame that would have crossed the limit
  void close_handles();

  uv_pipe_t pipe_{};
  uint64_t id_;
  proto::ProtocolLimits limits_;
  proto::FrameDecoder decoder_;
  FrameHandler on_frame_;
  ClosedHandler on_closed_;
  FramingErrorHandler on_framing_error_;
  ucred peer_{0, static_cast<uid_t>(-1), static_cast<gid_t>(-1)};
  std::array<char, 64 * 1024> read_buf_{};
  uv_idle_t flush_idle_{};
  std::string pending_;          // frames queued this iteration, not yet handed to uv_write
  uint64_t queued_bytes_ = 0;    // pending_ + writes in flight
  int writes_in_flight_ = 0;
  int open_handles_ = 0;         // pipe_ and flush_idle_: deleted after both close callbacks
  bool flush_scheduled_ = false;
  bool closing_ = false;
  uv_shutdown_t shutdown_req_{};
};

}  // namespace vks::server
