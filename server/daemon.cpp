#include "server/daemon.h"

#include <zmq.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "engine/common/error.h"
#include "engine/model/kv_pools.h"
#include "engine/model/servable_model.h"
#include "engine/vulkan/runner/runner_factory.h"
#include "server/catchup_mark.h"
#include "server/chat_tool_calls.h"
#include "server/draft_model.h"
#include "server/engine_translation.h"
#include "server/gpu_check.h"
#include "server/ipc_peer_filter.h"

namespace vks::server {

namespace {

template <class Handle>
uv_handle_t* as_handle(Handle* h) {
  return reinterpret_cast<uv_handle_t*>(h);
}

uint64_t ms_of(double seconds) { return static_cast<uint64_t>(std::max(0.0, seconds) * 1000.0); }

// Parses and test-renders the chat template now, so a template the interpreter cannot handle is
// reported at load, not at the first chat request.
std::shared_ptr<const chat::ModelChatTemplate> load_chat_template(const LlamaModel& model, const std::string& template_path) {
  auto loaded = std::make_shared<const chat::ModelChatTemplate>(chat::load_model_chat_template(model.file(), template_path));
  if (loaded->fallback_reason.empty()) {
    spdlog::info("chat template: {}", loaded->origin);
  } else {
    spdlog::warn("chat template: {}; falling back to ChatML (pass --chat-template FILE to use another)",
                 loaded->fallback_reason);
  }
  return loaded;
}

}  // namespace

ServedModel load_served_model(const std::string& path, const ServerOptions& options, const std::string& chat_template_path,
                              std::shared_ptr<ComputeShare> compute_share, SystemdNotifier* notifier) {
  ServedModel served;
  auto status = [notifier](const std::string& what) {
    if (notifier != nullptr) notifier->status(what);
  };
  status("loading model " + path);
  spdlog::info("loading model {}", path);
  try {
    // The same verdict as vks-gguf-info's (model and tokenizer), so both say the same thing.
    ServableModel servable = load_servable_model(path);
    served.model = std::move(servable.model);
    served.tokenizer = std::move(servable.tokenizer);
  } catch (const Error& e) {
    throw Error(e.code(), "cannot load model " + path + ": " + e.what() +
                              " (a GGUF file of a supported architecture is needed: " + supported_architecture_names() + ")");
  }
  served.config = served.model->config();
  status("loading the chat template");
  served.chat_template = load_chat_template(*served.model, chat_template_path);
  status("starting the compute device and compiling its kernels (slow only when the shader cache is cold)");
  spdlog::info("starting the compute device and compiling its kernels");
  RunnerOptions ro;
  ro.warm_up = true;
  ro.device = options.device;
  ro.force_cpu = options.force_cpu;
  ro.allow_cpu_fallback = !options.no_cpu_fallback;
  ro.force_vulkan = options.force_vulkan;
  ro.cpu_weights_in_memory = !options.mmap_weights;
  ro.cpu_threads = options.cpu_threads;
  ro.compute_share = std::move(compute_share);
  if (options.kv_tokens > 0) ro.num_blocks = (options.kv_tokens + ro.block_size - 1) / ro.block_size;
  // The window layers' own pool (engine/model/kv_pools.h; the engine frees their blocks past the
  // window), sized for the sequences the engine runs at once rather than the runner's step rows.
  ro.num_window_blocks = resolve_window_blocks(served.model->config(), -1, ro.block_size,
                                               std::min(options.max_seqs, ro.max_step_seqs),
                                               std::min(options.max_batched_tokens, ro.max_step_tokens), ro.num_blocks);
  ro.state_slots = std::min(options.max_seqs, ro.max_step_seqs);  // recurrent models: one per sequence run at once
  ro.kv_type_k = parse_kv_type(options.kv_type_k);
  ro.kv_type_v = parse_kv_type(options.kv_type_v);
  ro.cpu_expert_layers = options.cpu_expert_layers;
  std::unique_ptr<ModelRunner> runner = make_runner(*served.model, ro);
  served.device = runner->device_name();
  served.device_heap = runner->uses_device_heap();
  served.host_weight_bytes = runner->host_weight_bytes();
  EngineConfig ec;
  ec.max_batched_tokens = std::min(options.max_batched_tokens, runner->max_step_tokens());
  ec.max_seqs = std::min(options.max_seqs, runner->max_step_seqs());
  ec.max_queued = options.limits.max_queued;
  ec.max_prompt_tokens = options.limits.max_prompt_tokens;
  ec.max_new_tokens = options.limits.max_tokens;
  ec.prefix_caching = options.prefix_caching;
  ec.progress_interval_ms = options.progress_interval_ms;
  const bool drafts_with_model = !options.draft_model_path.empty() && path == options.model_path;
  ec.speculative_draft = options.speculative == "ngram" || drafts_with_model ? options.draft_tokens : 0;
  ec.speculative_cost_model = !options.draft_always;
  ec.policy = options.priority_policy ? SchedulingPolicy::kPriority : SchedulingPolicy::kFcfs;
  std::unique_ptr<ModelRunner> draft_runner;
  if (drafts_with_model) {
    status("loading the draft model " + options.draft_model_path);
    draft_runner = load_draft_runner(options.draft_model_path, ro, ec.max_seqs, path, *served.tokenizer,
                                     served.draft_model);
    spdlog::info("drafting with {} ({} layers, dim {}) on {}", options.draft_model_path,
                 served.draft_model->config().n_layers, served.draft_model->config().dim, draft_runner->device_name());
  }
  served.engine = std::make_unique<Engine>(std::move(runner), *served.tokenizer, ec, std::move(draft_runner));
  spdlog::info("model {} ({} layers, dim {}, vocab {}) on {}", path, served.config.n_layers,
               served.config.dim, served.config.vocab_size, served.device);
  if (!options.force_cpu) {
    if (auto warning = cpu_device_warning(served.device, gpu_render_nodes())) spdlog::warn("{}", *warning);
  }
  return served;
}

Daemon::Daemon(ServerOptions options, ListenFds fds, ServedModel pinned, std::shared_ptr<ComputeShare> compute_share,
               SystemdNotifier& notifier)
    : options_(std::move(options)),
      limits_(options_.limits),
      notifier_(notifier),
      registry_(std::chrono::milliseconds(ms_of(options_.retention_s)), options_.retention_max_bytes),
      compute_share_(std::move(compute_share)),
      rng_(std::random_device{}()) {
  residency_.max_loaded = options_.max_loaded_models;
  residency_.max_bytes = options_.max_loaded_bytes > 0 ? options_.max_loaded_bytes : default_loaded_bytes();
  if (pinned.engine) {
    // The pinned model's prompt limit (the least of --max-prompt-tokens, its runner's context and
    // the KV cache) is the one hello advertises and the wire parser applies: a 128K-context model
    // served with a 4K cache advertised 131,072, and one condition got two answers (the engine's
    // invalid_field where the daemon expected prompt_too_long). Other models' engines apply their own.
    limits_.max_prompt_tokens = pinned.engine->max_prompt_tokens();
    if (limits_.max_tokens <= 0) limits_.max_tokens = static_cast<int32_t>(pinned.engine->model_config().context_length);
    auto served = std::make_shared<ServedModel>(std::move(pinned));
    ModelSlot& slot = models_.add_pinned(store::catalog_model_of(options_.model_path), served, loaded_model_info(*served));
    slot.set_resident(resident_cost_of(slot.file, *served));
  }
  rescan_models();
  if (models_.slots().empty()) {
    throw Error(ErrorCode::kNotFound,
                "no model to serve: pass --model FILE, or --models-dir DIR with *.gguf files in it, or fetch one with "
                "`vkstream pull`");
  }

  if (uv_loop_init(&loop_) != 0) throw Error(ErrorCode::kInternal, "uv_loop_init failed");
  loop_open_ = true;
  uv_async_init(&loop_, &engine_async_, &Daemon::on_engine_async);
  engine_async_.data = this;
  uv_signal_init(&loop_, &sigterm_);
  uv_signal_init(&loop_, &sigint_);
  uv_timer_init(&loop_, &housekeeping_);
  uv_timer_init(&loop_, &phase_timer_);
  uv_timer_init(&loop_, &final_timer_);
  sigterm_.data = sigint_.data = this;
  housekeeping_.data = phase_timer_.data = final_timer_.data = this;
  handles_open_ = true;
  {
    std::lock_guard lock(async_guard_->mutex);
    async_guard_->async = &engine_async_;
  }
  for (ModelSlot* slot : models_.loaded()) slot->served->engine->set_event_notifier(engine_notifier());
  loader_ = std::make_unique<ModelLoader>(&loop_);
  probe_device_budget();
  read_templates();
  start_puller();
  try {
    setup_sockets(fds);
  } catch (...) {
    close_everything();
    uv_run(&loop_, UV_RUN_DEFAULT);
    throw;
  }
}

Daemon::~Daemon() {
  if (handles_open_) {
    close_everything();
    uv_run(&loop_, UV_RUN_DEFAULT);
  }
  if (loader_) loader_->close();
  for (ModelSlot* slot : models_.loaded()) slot->served.reset();
  if (zmq_context_ != nullptr) zmq_ctx_term(zmq_context_);
  if (loop_open_) uv_loop_close(&loop_);
}

void Daemon::setup_sockets(const ListenFds& fds) {
  PeerPolicy policy{options_.allow_uids, options_.allow_gids, options_.deny_uids};
  UdsServer::Hooks hooks;
  hooks.on_open = [this](Connection&) { touch(); };
  hooks.on_frame = [this](Connection& c, std::string& payload) {
    ClientRef from;
    from.transport = Transport::kUds;
    from.conn_id = c.id();
    from.uid = c.peer().uid;
    from.gid = c.peer().gid;
    from.pid = c.peer().pid;
    handle_request(from, payload);
  };
  hooks.on_closed = [this](Connection& c) { on_connection_closed(c); };
  hooks.on_framing_error = [this](Connection& c, const proto::ProtocolError& error) {
    // The error closes the connection only after the answers to every frame before it, some of
    // which may still be prepared off the loop (their completions run the deferred close).
    ClientRef from;
    from.transport = Transport::kUds;
    from.conn_id = c.id();
    auto fail = [this, id = c.id(), error] {
      if (Connection* conn = uds_ ? uds_->find(id) : nullptr) conn->fail(error);
    };
    if (off_loop_.busy(owner_key(from))) {
      off_loop_.defer(owner_key(from), std::move(fail));
    } else {
      fail();
    }
  };
  uds_ = std::make_unique<UdsServer>(&loop_, limits_, std::move(policy), std::move(hooks));
  uds_->set_max_connections(options_.max_connections);
  if (fds.uds) {
    uds_->adopt(*fds.uds);
  } else {
    uds_->bind(options_.socket_path, options_.socket_mode);
  }

  zmq_context_ = zmq_ctx_new();
  if (zmq_context_ == nullptr) throw Error(ErrorCode::kInternal, "zmq_ctx_new failed");
  router_ = std::make_unique<ZmqRouter>(zmq_context_, &loop_,
                                        [this](const ClientRef& from, std::string& payload) {
                                          handle_request(from, payload);
                                        });
  ZmqBindOptions ro;
  ro.endpoint = options_.router_endpoint;
  ro.curve_secret_key = options_.curve_secret_key;
  ro.socket_mode = options_.socket_mode;
  const IpcPeerFilter ipc_filter =
      ipc_peer_filter(PeerPolicy{options_.allow_uids, options_.allow_gids, options_.deny_uids});
  if (ipc_filter.narrowed) {
    spdlog::warn("--deny-uid with --allow-gid: the ZeroMQ ipc endpoints admit the allowed groups' members "
                 "as listed in the user and group databases now (libzmq's ipc filter cannot refuse a uid "
                 "that an allowed group admits)");
  }
  ro.ipc_allow_uids = ipc_filter.uids;  // the Unix socket's peer policy on the ZeroMQ ipc files too
  ro.ipc_allow_gids = ipc_filter.gids;
  ro.max_message_bytes = static_cast<int>(std::min<uint64_t>(limits_.max_frame_bytes, INT32_MAX));
  if (fds.router) {
    ro.adopt_fd = *fds.router;
    ro.endpoint = "ipc://" + unix_socket_path(*fds.router);
  }
  router_->bind(ro);

  pub_ = std::make_unique<ZmqPublisher>(zmq_context_, &loop_, [this](const std::string& topic) {
    StreamEntry* e = registry_.find_by_topic(topic);
    if (e == nullptr) return;
    // A late subscriber: everything so far, from seq 0; the live stream continues after it.
    spdlog::debug("late subscriber for {}: re-publishing {} events", e->id, e->events.size());
    // Marked, so that prefix (firehose) subscribers can drop what they already received.
    for (const std::string& ev : e->events) pub_->publish(e->topic, with_catchup_mark(ev));
  });
  ZmqBindOptions po;
  po.endpoint = options_.pub_endpoint;
  po.curve_secret_key = options_.curve_secret_key;
  po.socket_mode = options_.socket_mode;
  po.ipc_allow_uids = ipc_filter.uids;
  po.ipc_allow_gids = ipc_filter.gids;
  if (fds.pub) {
    po.adopt_fd = *fds.pub;
    po.endpoint = "ipc://" + unix_socket_path(*fds.pub);
  }
  pub_->bind(po);
  setup_http(fds);  // http_frontend_wiring.cpp
}

int Daemon::run() {
  uv_signal_start(&sigterm_, &Daemon::on_signal, SIGTERM);
  uv_signal_start(&sigint_, &Daemon::on_signal, SIGINT);
  const uint64_t tick_ms = options_.idle_exit_s > 0 ? std::clamp<uint64_t>(ms_of(options_.idle_exit_s) / 4, 10, 1000) : 1000;
  uv_timer_start(&housekeeping_, &Daemon::on_housekeeping, tick_ms, tick_ms);
  notifier_.start_watchdog(&loop_);
  touch();
  const ModelSlot* first = models_.slots().front().get();
  const std::string what = first->pinned ? first->info.name : std::to_string(models_.slots().size()) + " model(s)";
  const std::string where = "serving " + what + " on " + uds_->path() + ", " + router_->endpoint() + ", " + pub_->endpoint();
  notifier_.ready(where);
  spdlog::info("vkstreamd ready: {} ({})", where, first->pinned ? "device " + first->served->device : models_.names());
  uv_run(&loop_, UV_RUN_DEFAULT);

  // Every handle is closed once uv_run returns; the engine is already gone.
  if (zmq_context_ != nullptr) {
    zmq_ctx_term(zmq_context_);
    zmq_context_ = nullptr;
  }
  const int rc = uv_loop_close(&loop_);
  loop_open_ = false;
  if (rc != 0) {
    spdlog::error("uv_loop_close: {} (a handle was left open)", uv_strerror(rc));
    return 1;
  }
  spdlog::info("vkstreamd stopped");
  return exit_code_;
}

// ---- engine events ---------------------------------------------------------------------------

void Daemon::on_engine_async(uv_async_t* async) {
  auto* self = static_cast<Daemon*>(async->data);
  try {
    self->drain_engine_events();
  } catch (const std::exception& e) {
    spdlog::error("engine events: {}", e.what());
  } catch (...) {
    spdlog::error("engine events: unknown exception");
  }
}

void Daemon::drain_engine_events() {
  bool any_finished = false;
  for (ModelSlot* slot : models_.loaded()) {
    event_buffer_.clear();
    if (!slot->loaded()) continue;  // unloaded by an event handled just before
    slot->served->engine->poll_events(event_buffer_);  // everything queued: uv_async_send coalesces
    if (event_buffer_.empty()) continue;
    touch();
    for (const EngineEvent& ev : event_buffer_) {
      if (ev.type == EventType::kFirstToken || ev.type == EventType::kToken) {
        slot->itl.on_tokens(ev.request_id, ev.tokens.size(), std::chrono::steady_clock::now());
      }
      if (ev.type == EventType::kFinished) {
        --slot->running;
        slot->last_used = std::chrono::steady_clock::now();
        slot->itl.forget(ev.request_id);
        any_finished = true;
      }
      handle_engine_event(ev);
    }
  }
  event_buffer_.clear();
  if (any_finished) unload_expired_models();  // keep_alive 0 or an unload asked for: gone once idle
  maybe_finish_shutdown();
}

void Daemon::handle_engine_event(const EngineEvent& ev) {
  if (handle_embed_event(ev)) return;
  StreamEntry* e = registry_.find(ev.request_id);
  if (e == nullptr || e->state == proto::RequestState::kFinished) {
    spdlog::debug("event {} for unknown or finished request {}", event_type_name(ev.type), ev.request_id);
    return;
  }
  switch (ev.type) {
    case EventType::kQueued:
      e->queue_position = ev.queue_position;
      break;
    case EventType::kPreempted:
      e->state = proto::RequestState::kQueued;
      break;
    case EventType::kScheduled:
      e->state = proto::RequestState::kRunning;
      e->queue_position = -1;
      break;
    case EventType::kFirstToken:
    case EventType::kToken:
      itl_.on_tokens(ev.request_id, ev.tokens.size(), std::chrono::steady_clock::now());
      e->state = proto::RequestState::kRunning;
      e->generated_tokens += static_cast<int32_t>(ev.tokens.size());
      break;
    case EventType::kFinished:
      itl_.forget(ev.request_id);
      e->reason = to_wire(ev.reason);
      e->generated_tokens = ev.usage.generated_tokens;
      break;
    case EventType::kError:
      break;
    case EventType::kProgress:
      // Not in the log (no seq, no replay, no catch-up) and not for HTTP streams: it only tells
      // whoever is listening now that a long prompt is being read (docs/PROTOCOL.md 5.8).
      deliver(*e, proto::encode_event(stream_event_from_engine(ev, -1, false)));
      return;
  }
  // The reply's remaining calls come before its finished event, which then says tool_calls.
  if (ev.type == EventType::kFinished && e->tool_calls) {
    publish_tool_calls(*e, "", /*end=*/true);
    if (e->reason == proto::FinishReason::kStop && e->tool_calls->called()) e->reason = proto::FinishReason::kToolCalls;
  }
  proto::StreamEvent wire = stream_event_from_engine(ev, registry_.next_seq(*e), e->with_logprobs);
  if (wire.type == proto::StreamEventType::kFinished && e->reason) wire.reason = *e->reason;
  if (wire.type == proto::StreamEventType::kQueued || wire.type == proto::StreamEventType::kFinished) wire.model = e->model;
  if (wire.type == proto::StreamEventType::kFinished && e->load_ms > 0) {  // the wait for the load is part of both
    wire.timings.load_ms = e->load_ms;
    wire.timings.ttft_ms += e->load_ms;
    wire.timings.total_ms += e->load_ms;
  }
  std::string encoded = proto::encode_event(wire);
  registry_.append(*e, std::move(encoded));
  deliver(*e, e->events.back());
  if (e->owner.transport == Transport::kHttp && http_) http_->on_event(wire);
  if (wire.type == proto::StreamEventType::kToken && e->tool_calls) publish_tool_calls(*e, wire.text, /*end=*/false);
  if (ev.type == EventType::kFinished) {
    registry_.mark_finished(*e, std::chrono::steady_clock::now());
    spdlog::info("request {} finished: {} ({} tokens)", e->id, finish_reason_name(ev.reason),
                 ev.usage.generated_tokens);
  }
}

void Daemon::publish_tool_calls(StreamEntry& e, std::string_view text, bool end) {
  for (proto::StreamEvent& call : e.tool_calls->feed(e.id, text, end)) {
    call.id = e.id;
    call.seq = registry_.next_seq(e);
    registry_.append(e, proto::encode_event(call));
    deliver(e, e.events.back());
  }
}

void Daemon::deliver(StreamEntry& e, const std::string& encoded) {
  if (pub_) pub_->publish(e.topic, encoded);
  if (!e.stream_to_owner) return;
  switch (e.owner.transport) {
    case Transport::kUds: {
      Connection* c = uds_ ? uds_->find(e.owner.conn_id) : nullptr;
      if (c == nullptr || !c->send(encoded)) e.stream_to_owner = false;  // closing: its hook cancels
      break;
    }
    case Transport::kZmq:
      if (!router_ || !router_->send(e.owner, encoded)) {
        drop_owner(e.owner, "ZeroMQ peer gone or not reading (send high-water mark)");
      }
      break;
    case Transport::kHttp:  // rendered by the HTTP front end (handle_engine_event)
    case Transport::kNone:
      break;
  }
}

// ---- clients going away ----------------------------------------------------------------------

void Daemon::on_connection_closed(Connection& c) {
  touch();
  ClientRef owner;
  owner.transport = Transport::kUds;
  owner.conn_id = c.id();
  off_loop_.forget(owner_key(owner));  // its requests still waiting behind off-loop work
  drop_owner(owner, "client disconnected");
}

void Daemon::drop_owner(const ClientRef& owner, const char* why) {
  cancel_embeds_of(owner_key(owner));
  int cancelled = 0;
  for (const std::string& id : registry_.live_owned_by(owner_key(owner))) {
    StreamEntry* e = registry_.find(id);
    if (e == nullptr) continue;
    e->stream_to_owner = false;
    ModelSlot* slot = e->detached ? nullptr : models_.find(e->model);
    if (slot != nullptr && slot->loaded()) {
      slot->served->engine->cancel(id);
      ++cancelled;
    }
  }
  if (cancelled > 0) spdlog::info("{} ({}): cancelled {} request(s)", why, owner.describe(), cancelled);
}

// ---- life cycle ------------------------------------------------------------------------------

void Daemon::on_signal(uv_signal_t* handle, int signum) {
  auto* self = static_cast<Daemon*>(handle->data);
  try {
    spdlog::info("signal {}: shutting down", signum);
    self->begin_shutdown(signum == SIGTERM ? "SIGTERM" : "SIGINT");
  } catch (const std::exception& e) {
    spdlog::error("shutdown: {}", e.what());
  }
}

void Daemon::on_housekeeping(uv_timer_t* timer) {
  auto* self = static_cast<Daemon*>(timer->data);
  try {
    const auto now = std::chrono::steady_clock::now();
    self->registry_.evict(now);
    self->unload_expired_models();
    if (self->options_.idle_exit_s > 0 && self->phase_ == Phase::kServing &&
        (!self->puller_ || self->puller_->running() == 0) &&
        self->uds_->connection_count() == 0 && self->registry_.live_count() == 0 &&
        self->models_.loaded_unpinned_count() == 0 && self->loader_->running() == 0 &&
        (!self->http_ || self->http_->connection_count() == 0) &&
        now - self->last_activity_ >= std::chrono::milliseconds(ms_of(self->options_.idle_exit_s))) {
      spdlog::info("idle for {} s: exiting", self->options_.idle_exit_s);
      self->begin_shutdown("idle exit");
    }
  } catch (const std::exception& e) {
    spdlog::error("housekeeping: {}", e.what());
  }
}

void Daemon::begin_shutdown(const char* why) {
  if (phase_ != Phase::kServing) return;
  phase_ = Phase::kDraining;
  notifier_.stopping();
  uds_->stop_accepting();
  if (puller_) puller_->cancel_all("the pull was cancelled");  // answered shutting_down; FILE.part stays
  const int32_t live = registry_.live_count();
  spdlog::info("{}: stopped accepting; {} request(s) running, grace {} s", why, live, options_.grace_s);
  if (live > 0) uv_timer_start(&phase_timer_, &Daemon::on_phase_timer, ms_of(options_.grace_s), 0);
  maybe_finish_shutdown();
}

void Daemon::on_phase_timer(uv_timer_t* timer) {
  auto* self = static_cast<Daemon*>(timer->data);
  try {
    self->on_grace_expired();
  } catch (const std::exception& e) {
    spdlog::error("shutdown: {}", e.what());
  }
}

void Daemon::on_grace_expired() {
  if (phase_ == Phase::kDraining) {
    const std::vector<std::string> live = registry_.live_ids();
    spdlog::info("grace period over: cancelling {} request(s)", live.size());
    phase_ = Phase::kCancelling;
    for (const std::string& id : live) {
      if (ModelSlot* slot = slot_of_request(id)) slot->served->engine->cancel(id);
    }
    // The engine answers each cancel with a finished event; give it a bounded time to do so.
    uv_timer_start(&phase_timer_, &Daemon::on_phase_timer, 5000, 0);
    return;
  }
  if (phase_ == Phase::kCancelling) {
    // The engine did not finish them: close their streams ourselves so every stream has an end.
    for (const std::string& id : registry_.live_ids()) {
      spdlog::warn("request {} did not finish after cancel; closing its stream", id);
      EngineEvent ev;
      ev.request_id = id;
      ev.type = EventType::kFinished;
      ev.reason = FinishReason::kCancelled;
      handle_engine_event(ev);
    }
    maybe_finish_shutdown();
  }
}

void Daemon::maybe_finish_shutdown() {
  if (phase_ != Phase::kDraining && phase_ != Phase::kCancelling) return;
  if (registry_.live_count() > 0) return;
  phase_ = Phase::kClosing;
  spdlog::info("every stream finished; closing");
  close_everything();
}

void Daemon::close_everything() {
  if (!handles_open_) return;
  handles_open_ = false;
  phase_ = Phase::kClosing;
  {
    std::lock_guard lock(async_guard_->mutex);
    async_guard_->async = nullptr;
  }
  off_loop_.stop();  // off-loop work not started yet must not reach the engines below
  // Joins the engine threads; nothing is running any more (loads still running finish first).
  if (loader_) loader_->close();
  if (puller_) puller_->close();  // cancels and joins the pulls still running
  for (ModelSlot* slot : models_.loaded()) slot->served.reset();
  notifier_.close_watchdog();
  uv_close(as_handle(&engine_async_), nullptr);
  uv_close(as_handle(&sigterm_), nullptr);
  uv_close(as_handle(&sigint_), nullptr);
  uv_close(as_handle(&housekeeping_), nullptr);
  uv_close(as_handle(&phase_timer_), nullptr);
  if (uds_) {
    uds_->stop_accepting();
    uds_->close_all(/*flush=*/true);
  }
  if (http_) {
    http_->stop_accepting();
    http_->close_all(/*flush=*/true);
  }
  if (router_) router_->close();
  if (pub_) pub_->close();
  // Connections get a bounded time to take their final events.
  final_started_ = std::chrono::steady_clock::now();
  uv_timer_start(&final_timer_, &Daemon::on_final_timer, 20, 20);
}

void Daemon::on_final_timer(uv_timer_t* timer) {
  auto* self = static_cast<Daemon*>(timer->data);
  try {
    const bool none_left = (!self->uds_ || self->uds_->connection_count() == 0) &&
                           (!self->http_ || self->http_->connection_count() == 0);
    if (none_left) {
      uv_close(as_handle(timer), nullptr);
      return;
    }
    if (std::chrono::steady_clock::now() - self->final_started_ > std::chrono::seconds(3)) {
      spdlog::warn("{} connection(s) did not take their output; closing them", self->uds_->connection_count());
      self->uds_->close_all(/*flush=*/false);
      if (self->http_) self->http_->close_all(/*flush=*/false);
    }
  } catch (const std::exception& e) {
    spdlog::error("final flush: {}", e.what());
    if (self->uds_) self->uds_->close_all(/*flush=*/false);
    if (self->http_) self->http_->close_all(/*flush=*/false);
  }
}

}  // namespace vks::server
