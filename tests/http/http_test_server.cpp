#include "tests/http/http_test_server.h"

#include <nlohmann/json.hpp>

#include <future>
#include <stdexcept>
#include <unordered_map>

#include "server/http/json_body.h"

namespace vks::test {

struct TestHttpServer::Impl {
  TestHttpServer* owner = nullptr;
  uv_loop_t loop{};
  uv_async_t stop{};
  uv_timer_t flood_timer{};
  std::unique_ptr<http::HttpServer> server;
  std::unordered_map<uint64_t, uint64_t> flooding;  // connection id -> exchange

  void handle(http::HttpConnection& c, http::HttpRequest& r) {
    ++owner->requests;
    if (r.path == "/echo") {
      http::HttpResponse resp;
      resp.body = nlohmann::json{{"method", r.method}, {"path", r.path}, {"query", r.query},
                                 {"body", r.body}, {"content_type", r.media_type()}}
                      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      resp.headers.emplace_back("x-request-id", std::to_string(c.exchange()));
      c.respond(resp);
    } else if (r.path == "/json") {
      auto parsed = http::parse_json_object(r);
      if (auto* failure = std::get_if<http::ParseFailure>(&parsed)) {
        c.respond_error(failure->status, failure->message, failure->code);
        return;
      }
      http::HttpResponse resp;
      resp.body = std::get<http::JsonBody>(parsed).dump();
      c.respond(resp);
    } else if (r.path == "/stream") {
      const int n = r.query.rfind("n=", 0) == 0 ? std::atoi(r.query.c_str() + 2) : 3;
      c.begin_stream(200, "text/event-stream", {});
      for (int i = 0; i < n; ++i) c.send_chunk("chunk " + std::to_string(i) + "\n");
      c.end_stream();
    } else if (r.path == "/flood") {
      c.begin_stream(200, "text/event-stream", {});
      flooding[c.id()] = c.exchange();
    } else if (r.path == "/hang") {
      // never answered
    } else {
      c.respond_error(404, "no route " + r.path, "not_found");
    }
  }

  static void on_flood(uv_timer_t* t) {
    auto* self = static_cast<Impl*>(t->data);
    const std::string block(64 * 1024, 'x');
    for (auto it = self->flooding.begin(); it != self->flooding.end();) {
      http::HttpConnection* c = self->server->find(it->first);
      if (c == nullptr || c->exchange() != it->second || !c->send_chunk(block)) {
        it = self->flooding.erase(it);
      } else {
        ++it;
      }
    }
  }
};

TestHttpServer::TestHttpServer(const http::HttpLimits& limits, const std::string& unix_path, int adopt_fd,
                               bool refuse_unix_peers)
    : impl_(std::make_unique<Impl>()) {
  impl_->owner = this;
  std::promise<uint16_t> ready;
  auto ready_future = ready.get_future();
  thread_ = std::thread([this, limits, unix_path, adopt_fd, refuse_unix_peers, &ready] {
    Impl& im = *impl_;
    uv_loop_init(&im.loop);
    uv_async_init(&im.loop, &im.stop, [](uv_async_t* a) {
      auto* self = static_cast<Impl*>(a->data);
      self->server->stop_accepting();
      self->server->close_all(false);
      uv_close(reinterpret_cast<uv_handle_t*>(&self->stop), nullptr);
      uv_close(reinterpret_cast<uv_handle_t*>(&self->flood_timer), nullptr);
    });
    im.stop.data = &im;
    uv_timer_init(&im.loop, &im.flood_timer);
    im.flood_timer.data = &im;
    uv_timer_start(&im.flood_timer, &Impl::on_flood, 1, 1);
    http::HttpServer::Hooks hooks;
    hooks.on_request = [&im](http::HttpConnection& c, http::HttpRequest& r) { im.handle(c, r); };
    hooks.on_closed = [this](http::HttpConnection& c) {
      ++closed;
      if (c.answering()) ++closed_while_answering;
    };
    if (refuse_unix_peers) {
      hooks.allow_peer = [](const http::PeerInfo& p, std::string& why) {
        if (!p.is_unix) return true;
        why = "uid " + std::to_string(p.cred.uid) + " is not allowed";
        return false;
      };
    }
    im.server = std::make_unique<http::HttpServer>(&im.loop, limits, std::move(hooks));
    try {
      if (adopt_fd >= 0) {
        im.server->adopt(adopt_fd);
      } else {
        im.server->listen(http::parse_http_endpoint("127.0.0.1:0"));
      }
      if (!unix_path.empty()) im.server->listen(http::parse_http_endpoint("unix:" + unix_path));
      ready.set_value(im.server->tcp_port());
    } catch (...) {
      ready.set_value(0);
    }
    uv_run(&im.loop, UV_RUN_DEFAULT);
    im.server.reset();
    uv_loop_close(&im.loop);
  });
  port_ = ready_future.get();
  if (port_ == 0) {
    uv_async_send(&impl_->stop);
    thread_.join();
    throw std::runtime_error("test HTTP server did not start");
  }
}

TestHttpServer::~TestHttpServer() {
  uv_async_send(&impl_->stop);
  thread_.join();
}

}  // namespace vks::test
