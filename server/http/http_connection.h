#pragma once
// One HTTP/1.1 client connection (TCP or Unix socket) on the loop thread. Requests are parsed and
// handed out one at a time (an "exchange"); the next pipelined request is parsed only after the
// current answer is complete, so answers go out in request order. An answer is either whole
// (respond) or streamed (begin_stream / send_chunk / end_stream, chunked transfer encoding).
// Output is bounded: past max_output_bytes queued, a slow reader is closed at once and the owner
// learns it through on_closed (and cancels what the connection was waiting for).
// Deleted by its HttpServer from the close callback only.
#include <sys/socket.h>
#include <uv.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "server/http/http_limits.h"
#include "server/http/http_message.h"
#include "server/http/http_request_parser.h"

namespace vks::http {

struct PeerInfo {
  bool is_unix = false;
  ucred cred{0, static_cast<uid_t>(-1), static_cast<gid_t>(-1)};  // unix sockets only
  std::string address;  // "127.0.0.1:5123" or "unix"
};

class HttpConnection {
 public:
  using RequestHandler = std::function<void(HttpConnection&, HttpRequest&)>;
  using ClosedHandler = std::function<void(HttpConnection&)>;

  HttpConnection(uint64_t id, bool is_tcp, const HttpLimits& limits, RequestHandler on_request,
                 ClosedHandler on_closed);
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  uv_stream_t* stream() { return &handle_.stream; }
  uv_handle_t* handle() { return &handle_.handle; }
  uint64_t id() const { return id_; }
  const PeerInfo& peer() const { return peer_; }
  void set_peer(PeerInfo peer) { peer_ = std::move(peer); }

  // After init + uv_accept succeeded.
  void start_reading();

  // The exchange (request) being answered; 0 when none. Streams check it before each chunk so a
  // late event never lands in a later answer.
  uint64_t exchange() const { return active_ ? exchange_ : 0; }
  bool answering() const { return active_; }

  // Whole answer to the current request. Ignored when no request is being answered.
  void respond(const HttpResponse& response);
  // A JSON error answer in OpenAI's shape to the current request.
  void respond_error(int status, std::string_view message, std::string_view code,
                     const HeaderList& headers = {});
  // Streamed answer: head now, chunks later. False when closing or the output bound was hit
  // (the connection is then being closed).
  bool begin_stream(int status, std::string_view content_type, const HeaderList& headers);
  bool send_chunk(std::string_view data);
  void end_stream();

  // Lets queued writes finish, then closes. With `linger`, unread request bytes are read and
  // dropped for a moment first, so the kernel does not reset the connection (losing the error
  // answer) because the client was still sending.
  void close_after_flush(bool linger = false);
  void close_now();
  bool closing() const { return closing_; }
  uint64_t queued_bytes() const { return queued_bytes_; }

  // Housekeeping: closes a connection idle past keep_alive_idle_ms or whose request is not
  // complete after request_timeout_ms (answering 408). Returns true if it started closing.
  bool expire(std::chrono::steady_clock::time_point now);

  // Refuses the connection before any request (503 busy, 403 peer not allowed).
  void refuse(int status, std::string_view message, std::string_view code);

 private:
  struct WriteReq;
  static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void on_write(uv_write_t* req, int status);
  static void on_shutdown(uv_shutdown_t* req, int status);
  static void on_close(uv_handle_t* handle);
  void handle_bytes(std::string_view bytes);
  void dispatch_ready();   // hands out the next parsed request when none is being answered
  void finish_exchange();  // the current answer is complete
  void write_raw(std::string bytes);
  bool over_output_bound(size_t more);
  void fail_stream(const ParseFailure& failure);

  uv_any_handle handle_{};
  bool is_tcp_;
  uint64_t id_;
  HttpLimits limits_;
  HttpRequestParser parser_;
  RequestHandler on_request_;
  ClosedHandler on_closed_;
  PeerInfo peer_;
  std::array<char, 64 * 1024> read_buf_{};
  uint64_t queued_bytes_ = 0;
  bool closing_ = false;
  bool reading_ = false;
  bool active_ = false;          // a request is being answered
  bool keep_alive_ = true;       // of the current request
  bool http10_ = false;          // of the current request
  bool head_only_ = false;       // HEAD: no body
  bool streaming_ = false;
  bool dispatching_ = false;     // inside dispatch_ready (no recursion)
  bool lingering_ = false;       // closing: still reading and dropping input
  uint64_t lingered_bytes_ = 0;
  uint64_t exchange_ = 0;
  std::chrono::steady_clock::time_point last_activity_ = std::chrono::steady_clock::now();
  // When the current request's first byte came: request_timeout_ms counts from here, so it times
  // the whole request (headers and body), not the silence between its bytes.
  std::chrono::steady_clock::time_point request_started_ = last_activity_;
  uv_shutdown_t shutdown_req_{};
};

}  // namespace vks::http
