#pragma once
// vkstreamd's core: one libuv loop thread owns every socket (Unix socket, ZeroMQ ROUTER and XPUB),
// the Engine owns its own thread(s); engine events reach the loop through uv_async_send, whose
// callback drains every queued event (it coalesces). Requests are known by id (StreamRegistry).
#include <uv.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <random>
#include <string>
#include <vector>

#include "engine/chat/model_chat_template.h"
#include "engine/common/compute_share.h"
#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "engine/tokenizer/tokenizer.h"
#include "protocol/requests.h"
#include "protocol/responses.h"
#include "server/client_ref.h"
#include "server/engine_translation.h"
#include "server/http_frontend.h"
#include "server/itl_histogram.h"
#include "server/listen_fds.h"
#include "server/model_loader.h"
#include "server/model_pull.h"
#include "server/model_set.h"
#include "server/off_loop.h"
#include "server/preparing_requests.h"
#include "server/server_options.h"
#include "server/stream_registry.h"
#include "server/systemd_notify.h"
#include "server/uds_server.h"
#include "server/zmq_publisher.h"
#include "server/zmq_router.h"

namespace vks::server {

// A loaded model: its weights, tokenizer and the Engine running it. The model and tokenizer must
// outlive the engine (members are destroyed in reverse order).
struct ServedModel {
  std::unique_ptr<LlamaModel> model;      // may be null when the engine runs a test runner
  std::unique_ptr<LlamaModel> draft_model;  // --draft-model (for --model only), or null
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Engine> engine;
  LlamaConfig config;
  std::string device;
  bool device_heap = false;  // its weights and KV pool are in a discrete GPU's own memory
  uint64_t host_weight_bytes = 0;  // ... but for these, kept in host memory (experts run on the CPU)
  // The chat template `chat` requests render with (the model's, --chat-template, or ChatML);
  // null when the daemon runs without a model file (tests with a fake runner).
  std::shared_ptr<const chat::ModelChatTemplate> chat_template;
};

// Loads the GGUF at `path`, its tokenizer (and chat template: `chat_template_path` when not empty)
// and the runner (Vulkan, CPU fallback) with the options' device and KV settings, and starts the
// Engine. Reports progress through STATUS= when `notifier` is given. Throws vks::Error saying what to fix.
ServedModel load_served_model(const std::string& path, const ServerOptions& options, const std::string& chat_template_path,
                              std::shared_ptr<ComputeShare> compute_share, SystemdNotifier* notifier);

// What a loaded model reports and holds in each memory (weights, KV pool, recurrent states); three
// quarters of the host's memory (the default budget of the loaded models).
proto::ModelInfo loaded_model_info(const ServedModel& served);
ModelCost resident_cost_of(const store::CatalogModel& file, const ServedModel& served);
uint64_t default_loaded_bytes();

// Tokenizes an embed request's texts into its token inputs (libuv's pool; embed_handler.cpp).
void tokenize_embed_inputs(EmbedRequest& request, const Tokenizer& tokenizer);

class Daemon {
 public:
  // Takes the socket-activated descriptors (may be empty) and the --model loaded already (its
  // engine null when there is none: every model then loads on demand). Binds or adopts every
  // socket; throws vks::Error on any startup problem.
  // `compute_share`: the cores its models' CPU runners share (the pinned model's included).
  Daemon(ServerOptions options, ListenFds fds, ServedModel pinned, std::shared_ptr<ComputeShare> compute_share,
         SystemdNotifier& notifier);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Serves until SIGTERM/SIGINT or idle exit; returns the process exit code (0 on a clean stop).
  int run();

 private:
  enum class Phase { kServing, kDraining, kCancelling, kClosing, kClosed };

  // Engine events.
  static void on_engine_async(uv_async_t* async);
  void drain_engine_events();
  void handle_engine_event(const EngineEvent& ev);
  void deliver(StreamEntry& e, const std::string& encoded);
  // A chat reply's tool calls that `text` completes (all that remain with `end`) as tool_call
  // events, logged and delivered as the entry's other events.
  void publish_tool_calls(StreamEntry& e, std::string_view text, bool end);

  // Requests (request_handler.cpp).
  void handle_request(const ClientRef& from, std::string& payload);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::HelloRequest& r);
  void handle(const ClientRef& from, const proto::Tag& tag, proto::GenerateRequest& r);
  // A generate (or a rendered chat) translated for the engine: checks, submit, stream registry.
  void submit_generate(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, GenerateJob& r);
  // The one admission of every transport (admission.cpp): the checks, the engine's submit, the
  // registration; the outcome as structured fields for the transport to render.
  struct Admission {
    bool ok = false;
    std::string id;
    std::string topic;  // generations
    int32_t queue_position = 0;
    int32_t prompt_tokens = 0;
    proto::ProtocolError error;
    std::string error_id;  // the id an error answer names ("" = none)
    int32_t retry_after_ms = 0;
  };
  // The checks alone (shutting down, the client's live requests of every kind against
  // max_requests_per_connection, a chosen id already used): the refusal, or nullopt.
  std::optional<Admission> admission_check(const ClientRef& from, const std::string& id);
  Admission admit_generate(const ClientRef& from, ModelSlot& model, GenerateJob& job);
  // `tag`: echoed in the msgpack answer the engine's kFinished will bring.
  Admission admit_embed(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, EmbedRequest& request);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::CancelRequest& r);
  // A cancel of a request the daemon knows (live, an embed, or still being prepared): cancels it
  // and returns the answer; nullopt (nothing done) when the id names none of them.
  std::optional<std::string> cancel_known(const ClientRef& from, const proto::Tag& tag, const proto::CancelRequest& r);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::StatusRequest& r);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::StatsRequest& r);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::TokenizeRequest& r);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::DetokenizeRequest& r);
  void detokenize(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, const proto::DetokenizeRequest& r);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::ModelRequest& r);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::ReplayRequest& r);
  // The served models (model_handler.cpp): list, load, unload.
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::ModelsRequest& r);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::LoadRequest& r);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::UnloadRequest& r);
  proto::ModelsAnswer models_answer();
  // Getting and removing models (pull_handler.cpp), for every transport: `done` runs on the loop
  // thread with the answer or the error (`progress`, may be null, while it downloads).
  using PullDone = std::function<void(const proto::PulledAnswer* pulled, const proto::ProtocolError* error)>;
  void pull_model(const std::string& name, ModelPuller::OnProgress progress, PullDone done);
  void delete_model(const std::string& name, std::function<void(const proto::ProtocolError* error)> done);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::PullRequest& r);
  void handle(const ClientRef& from, const proto::Tag& tag, const proto::DeleteRequest& r);
  // Off the loop thread (request_off_loop.cpp): true when the request was taken over.
  bool defer_if_busy(const ClientRef& from, std::string& payload);
  // A deferred payload that is a cancel of a known request: cancelled now, its answer returned.
  std::optional<std::string> cancel_ahead(const ClientRef& from, const std::string& payload);
  bool tokenize_off_loop(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, const proto::TokenizeRequest& r);
  bool detokenize_off_loop(const ClientRef& from, const proto::Tag& tag, ModelSlot& model,
                           const proto::DetokenizeRequest& r);
  // The one off-loop preparation (preparation.cpp): `prepare` (tokenize or render into the
  // request, on a pool thread; returns the error to answer) and the constraint compile, then `then`
  // on the loop with the job or the error; nothing when `still_wanted` says the client left.
  using Preparation = std::function<std::optional<proto::ProtocolError>(ServedModel&, GenerateRequest&)>;
  using Prepared = std::function<void(ModelSlot& model, GenerateJob& job, const proto::ProtocolError* error)>;
  // `stop_with_client`: the work stops (its cancel flag) when the client goes away.
  void prepare_off_loop(const ClientRef& from, ModelSlot& model, std::shared_ptr<GenerateJob> job, Preparation prepare,
                        OffLoop::Cost cost, bool stop_with_client, std::function<bool()> still_wanted, Prepared then);
  // A long prompt text to tokenize or a grammar/schema to compile: worth the pool's round trip.
  static bool needs_preparation(const GenerateRequest& req);
  // An embed request's texts tokenized off the loop when they are long, then `then` on the loop.
  using EmbedPrepared = std::function<void(ModelSlot& model, EmbedRequest& request, const proto::ProtocolError* error)>;
  void prepare_embed(const ClientRef& from, ModelSlot& model, std::shared_ptr<EmbedRequest> request,
                     std::function<bool()> still_wanted, EmbedPrepared then);
  static std::optional<proto::ProtocolError> tokenize_prompt(ServedModel& served, GenerateRequest& q);
  std::function<bool()> still_connected(const ClientRef& from, bool detached);
  // chat_handler.cpp: renders and tokenizes off the loop (OffLoop), then continues as a generate.
  void handle(const ClientRef& from, const proto::Tag& tag, proto::ChatRequest& r);
  void render_chat(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, proto::ChatRequest r,
                   std::chrono::steady_clock::time_point arrived);
  // A chat's preparation for `job` (every transport): rendered and tokenized (render_chat_request);
  // with tools, job->tool_calls splits the reply into tool_call events. *own_template (when given)
  // receives the request's own template, if it sent one.
  static Preparation chat_preparation(std::shared_ptr<const proto::ChatRequest> chat, std::shared_ptr<GenerateJob> job,
                                      std::shared_ptr<std::shared_ptr<const chat::ModelChatTemplate>> own_template);
  // embed_handler.cpp: embed requests (one answer when the engine finishes them, no stream).
  void handle(const ClientRef& from, const proto::Tag& tag, proto::EmbedRequest& r);
  void embed(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, const proto::EmbedRequest& r);
  void submit_embed(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, EmbedRequest& request);
  bool handle_embed_event(const EngineEvent& ev);  // false: not an embed request's event
  void cancel_embeds_of(const std::string& owner_key);
  void reply(const ClientRef& to, const std::string& payload);
  void reply_error(const ClientRef& to, const proto::Tag& tag, proto::WireError code,
                   const std::string& message, const std::string& field = {}, const std::string& id = {});
  proto::StatsSnapshot stats_snapshot() const;
  // Prometheus text: the daemon's and default model's figures, and every model's under its label.
  std::string metrics_text() const;

  // The served models (model_routing.cpp). `then` runs with model `name`'s slot once it is loaded
  // (at once when it is; later, on the loop thread, after its load), or with the error that stops
  // it (not_found, model_load_failed, overloaded, shutting_down). While it loads, the requests of
  // client `hold_key` (empty: none) that come later wait, so that its answers keep their order.
  using ModelThen = std::function<void(ModelSlot* model, const proto::ProtocolError* error)>;
  // The slot `name` names (ModelSet::find), looking at the model folders again when none does.
  ModelSlot* find_model(const std::string& name);
  proto::ProtocolError model_not_found(const std::string& name) const;  // lists the served names
  void with_model(const std::string& name, std::optional<double> keep_alive, const std::string& hold_key, ModelThen then);
  // The same for a msgpack request: its error is answered to `from`, `then` runs only on success.
  void with_model_for(const ClientRef& from, const proto::Tag& tag, const std::string& name,
                      std::optional<double> keep_alive, std::function<void(ModelSlot&)> then);
  void start_load(ModelSlot& slot);
  uint64_t kv_pool_estimate(const ModelSlot& slot) const;  // before its load: --ctx-size's pool, else the default
  void on_model_loaded(const std::string& name, std::shared_ptr<ServedModel> served, std::exception_ptr error,
                       std::chrono::steady_clock::time_point started);
  void unload_now(ModelSlot& slot, const char* why);
  // Unloads least recently used idle models until `slot` (loaded, measured) fits the budgets.
  void make_room_beside(const ModelSlot& slot);
  std::string budget_text() const;  // the memory budgets, for messages
  // Learns off the loop whether models will live in a discrete GPU's heap, and its budget.
  void probe_device_budget();
  void unload_expired_models();
  bool rescan_models();  // false when nothing changed
  // Reads the GGUF headers of the models listed but not loaded: at once (`now`, at startup) or off the loop.
  void read_headers(bool now);
  // Reads off the loop the chat templates that the start-up header reads left out.
  void read_templates();
  void note_use(ModelSlot& slot, std::optional<double> keep_alive);
  // How long a request that arrived at `arrived` waited for `slot` to load (0: it was loaded).
  static double load_wait_ms(const ModelSlot& slot, std::chrono::steady_clock::time_point arrived);
  ModelSlot* slot_of_request(const std::string& id);
  std::function<void()> engine_notifier() const;  // wakes the loop thread (any thread may call it)

  // HTTP front end (http_frontend_wiring.cpp).
  void setup_http(const ListenFds& fds);
  void setup_http_pull(HttpFrontend::Backend& backend);  // Backend::pull and Backend::remove
  http::ModelCatalogue catalogue_entry(const ModelSlot& slot) const;
  // Runs `work` (tokenize, count tokens, apply a template) with model's template and tokenizer off the loop.
  void run_model_work(uint64_t conn_id, ModelSlot& model, HttpFrontend::Backend::ModelWork work, bool client_template,
                      std::function<bool()> still_wanted, std::function<void(nlohmann::json, std::exception_ptr)> done);
  void submit_http(uint64_t conn_id, const proto::GenerateRequest& message, std::function<bool()> still_wanted,
                   std::function<void(HttpSubmitOutcome)> done);
  HttpSubmitOutcome submit_http_now(uint64_t conn_id, ModelSlot& model, GenerateJob& job);
  // A later choice's chat: `rendered` into `job`, then submitted at once.
  HttpSubmitOutcome submit_http_rendered(uint64_t conn_id, ModelSlot& model, const proto::ChatRequest& chat,
                                         std::shared_ptr<const RenderedChat> rendered, GenerateJob& job);
  // `rendered`: an earlier choice's rendering of the same conversation, taken instead of rendering.
  void submit_http_chat(uint64_t conn_id, proto::ChatRequest message, std::shared_ptr<const RenderedChat> rendered,
                        std::function<bool()> still_wanted, std::function<void(HttpSubmitOutcome)> done);
  void submit_http_embed(uint64_t conn_id, proto::EmbedRequest message, std::function<bool()> still_wanted,
                         std::function<void(HttpSubmitOutcome)> done);
  void submit_http_embed_to(uint64_t conn_id, ModelSlot& model, const proto::EmbedRequest& message,
                            std::function<bool()> still_wanted, std::function<void(HttpSubmitOutcome)> done);
  // Runs `prepare` (tokenize or render into job->request) and the constraint compile on libuv's
  // pool, then submits; `on_prepared` (when set) sees the prepared request just before.
  void submit_http_prepared(uint64_t conn_id, ModelSlot& model, std::shared_ptr<GenerateJob> job, Preparation prepare,
                            OffLoop::Cost cost, std::function<bool()> still_wanted,
                            std::function<void(HttpSubmitOutcome)> done,
                            std::function<void(const GenerateJob&)> on_prepared = nullptr);

  // Clients going away.
  void on_connection_closed(Connection& c);
  void drop_owner(const ClientRef& owner, const char* why);

  // Life cycle.
  void setup_sockets(const ListenFds& fds);
  void start_puller();  // when the model cache is served (pull_handler.cpp)
  void begin_shutdown(const char* why);
  void on_grace_expired();
  void maybe_finish_shutdown();
  void close_everything();
  static void on_signal(uv_signal_t* handle, int signum);
  static void on_housekeeping(uv_timer_t* timer);
  static void on_phase_timer(uv_timer_t* timer);
  static void on_final_timer(uv_timer_t* timer);
  void touch() { last_activity_ = std::chrono::steady_clock::now(); }

  // The engine thread calls the notifier; it must never touch a closed uv_async_t.
  struct AsyncGuard {
    std::mutex mutex;
    uv_async_t* async = nullptr;
  };

  ServerOptions options_;
  proto::ProtocolLimits limits_;  // effective (0s replaced by the model's context)
  SystemdNotifier& notifier_;
  uv_loop_t loop_{};
  bool loop_open_ = false;
  ModelSet models_;
  std::unique_ptr<ModelLoader> loader_;
  std::string pull_cache_dir_;            // where pulls go: the model cache, when served
  std::unique_ptr<ModelPuller> puller_;   // null when the model cache is not served
  ResidencyLimits residency_;
  std::chrono::steady_clock::time_point last_scan_{};
  void* zmq_context_ = nullptr;
  StreamRegistry registry_;
  std::unique_ptr<UdsServer> uds_;
  std::unique_ptr<ZmqRouter> router_;
  std::unique_ptr<ZmqPublisher> pub_;
  OffLoop off_loop_;  // tokenizing/detokenizing on libuv's pool; per-client order of answers
  std::unique_ptr<HttpFrontend> http_;
  ItlHistogram itl_;  // cumulative, for stats and /metrics
  struct PendingEmbed {
    std::string model;
    ClientRef owner;
    std::string owner_key;
    proto::Tag tag;
    std::optional<EngineEvent> error;  // its kError, answered with the kFinished that follows
  };
  std::unordered_map<std::string, PendingEmbed> pending_embeds_;  // by request id
  PreparingRequests preparing_;  // generations with a chosen id still prepared off the loop

  uv_async_t engine_async_{};
  std::shared_ptr<AsyncGuard> async_guard_ = std::make_shared<AsyncGuard>();
  uv_signal_t sigterm_{};
  uv_signal_t sigint_{};
  uv_timer_t housekeeping_{};
  uv_timer_t phase_timer_{};   // grace period, then the wait for cancelled streams to finish
  uv_timer_t final_timer_{};   // bounds the flush of connections at the very end
  bool handles_open_ = false;
  std::chrono::steady_clock::time_point final_started_{};

  Phase phase_ = Phase::kServing;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_activity_ = started_;
  std::shared_ptr<ComputeShare> compute_share_;  // handed to every model's runner
  std::mt19937_64 rng_;
  std::vector<EngineEvent> event_buffer_;
  int64_t requests_total_ = 0;
  int64_t requests_rejected_ = 0;
  int64_t chat_renders_ = 0;  // chat conversations sent to be rendered (vkstream_chat_renders_total)
  int exit_code_ = 0;
};

}  // namespace vks::server
