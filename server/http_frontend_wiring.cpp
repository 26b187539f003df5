// Daemon ↔ HttpFrontend: the --http listeners and the socket-activated "http" descriptor, and the
// submit path of HTTP generations (the same registry, ids, PUB topics and limits as every other
// transport; answers are rendered by the front end from the engine events).
#include <spdlog/spdlog.h>

#include <span>

#include "protocol/stats.h"
#include "protocol/topic.h"
#include "server/daemon.h"

namespace vks::server {

void Daemon::setup_http(const ListenFds& fds) {
  if (options_.http_endpoints.empty() && !fds.http) return;
  HttpFrontendOptions ho;
  ho.endpoints = options_.http_endpoints;
  ho.api_key = options_.api_key;
  ho.unix_mode = options_.socket_mode;
  ho.limits.max_connections = options_.http_max_connections;
  ho.limits.max_output_bytes = limits_.max_output_bytes;
  // A JSON body carries the prompt with some escaping: twice the frame limit.
  ho.limits.max_body_bytes = 2ull * limits_.max_frame_bytes;
  ho.wire_limits = limits_;

  HttpFrontend::Backend backend;
  backend.submit = [this](uint64_t conn_id, proto::GenerateRequest m, std::function<bool()> still_wanted,
                          std::function<void(HttpSubmitOutcome)> done) {
    submit_http(conn_id, m, std::move(still_wanted), std::move(done));
  };
  backend.connection_closed = [this](uint64_t conn_id) {
    touch();
    ClientRef owner;
    owner.transport = Transport::kHttp;
    owner.conn_id = conn_id;
    drop_owner(owner, "HTTP client disconnected");
  };
  backend.metrics = [this] { return proto::render_prometheus(stats_snapshot()); };
  backend.serving = [this] { return phase_ == Phase::kServing; };
  PeerPolicy policy{options_.allow_uids, options_.allow_gids, options_.deny_uids};
  backend.allow_unix_peer = [policy](const http::PeerInfo& peer, std::string& why) {
    if (policy.allows(peer.cred)) return true;
    why = "uid " + std::to_string(peer.cred.uid) + " is not allowed on this socket (--allow-uid/--allow-gid)";
    return false;
  };
  // The text a token contributes inside a sequence (its leading space kept, unlike a lone decode):
  // the tokenizer's own piece bytes (SentencePiece and byte-level BPE alike); a control token,
  // which contributes no text, is shown by its vocabulary string.
  backend.token_text = [this](TokenId id) {
    if (!served_.tokenizer || id < 0 || id >= served_.tokenizer->vocab_size()) return std::string();
    std::string piece = served_.tokenizer->token_bytes(id);
    if (piece.empty()) piece = std::string(served_.tokenizer->token_text(id));
    return piece;
  };
  http_ = std::make_unique<HttpFrontend>(&loop_, std::move(ho),
                                         make_model_catalogue(options_.model_path, model_info_, ""), std::move(backend));
  http_->start(fds.http);
  for (const std::string& a : http_->addresses()) spdlog::info("HTTP API on {}", a);
}

void Daemon::submit_http(uint64_t conn_id, const proto::GenerateRequest& message, std::function<bool()> still_wanted,
                         std::function<void(HttpSubmitOutcome)> done) {
  GenerateJob job = to_generate_job(message);
  GenerateRequest& req = job.request;
  // A long prompt is tokenized on libuv's pool, as for the Unix socket (request_off_loop.cpp).
  constexpr size_t kOffLoopMinTextBytes = 1024;
  if (!req.prompt_ids.empty() || req.prompt_text.size() < kOffLoopMinTextBytes || !served_.tokenizer) {
    done(submit_http_now(conn_id, job));
    return;
  }
  auto shared = std::make_shared<GenerateJob>(std::move(job));
  const Tokenizer* tok = served_.tokenizer.get();
  ClientRef from;
  from.transport = Transport::kHttp;
  from.conn_id = conn_id;
  off_loop_.run(
      &loop_, owner_key(from),
      [tok, shared] {
        GenerateRequest& q = shared->request;
        q.prompt_ids = tok->encode(q.prompt_text, q.add_bos);
        q.prompt_ids_from_text = true;
      },
      [this, conn_id, shared, still_wanted = std::move(still_wanted), done = std::move(done)](std::exception_ptr error) {
        if (!handles_open_ || !still_wanted()) return;  // the client went away: nothing started
        if (error) {
          HttpSubmitOutcome failed;
          failed.error = proto::make_error(proto::WireError::kInternal, "tokenizing the prompt failed", "prompt");
          done(failed);
          return;
        }
        if (shared->request.prompt_ids.empty()) shared->request.prompt_ids_from_text = false;
        done(submit_http_now(conn_id, *shared));
      });
}

HttpSubmitOutcome Daemon::submit_http_now(uint64_t conn_id, GenerateJob& r) {
  touch();
  HttpSubmitOutcome out;
  ClientRef from;
  from.transport = Transport::kHttp;
  from.conn_id = conn_id;
  if (phase_ != Phase::kServing || !served_.engine) {
    ++requests_rejected_;
    out.error = proto::make_error(proto::WireError::kShuttingDown, "the server is shutting down; retry after it restarts");
    return out;
  }
  if (!r.request.id.empty() && registry_.contains(r.request.id)) {
    ++requests_rejected_;
    out.error = proto::make_error(proto::WireError::kAlreadyExists,
                                  "request id '" + r.request.id + "' is already live or retained; choose another", "id");
    return out;
  }
  const bool with_logprobs = r.request.logprobs >= 0;
  const std::string chosen_id = r.request.id;
  SubmitResult result = served_.engine->submit(std::move(r.request));
  if (!result.ok) {
    ++requests_rejected_;
    spdlog::info("{}: generate rejected: {}", from.describe(), result.message);
    out.error = error_from_submit(result, limits_.max_prompt_tokens);
    out.retry_after_ms = result.retry_after_ms;
    out.id = chosen_id;
    return out;
  }
  StreamEntry entry;
  entry.id = result.id;
  entry.topic = proto::topic_for(proto::stream_token_from(rng_));
  entry.owner = from;
  entry.stream_to_owner = false;  // HTTP answers are rendered from engine events, not msgpack frames
  entry.detached = r.detached;
  entry.with_logprobs = with_logprobs;
  entry.queue_position = result.queue_position;
  entry.prompt_tokens = result.prompt_tokens;
  StreamEntry& e = registry_.add(std::move(entry));
  ++requests_total_;
  spdlog::info("{}: generate {} accepted ({} prompt tokens, topic {})", from.describe(), e.id, e.prompt_tokens, e.topic);
  out.ok = true;
  out.id = e.id;
  out.prompt_tokens = e.prompt_tokens;
  return out;
}

}  // namespace vks::server
