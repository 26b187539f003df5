#pragma once
// Server → client messages: direct answers (echo the request's tag) and per-request stream events
// (carry id + seq, never a tag). Encoders for the server, a parser for clients.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/errors.h"
#include "protocol/limits.h"
#include "protocol/requests.h"
#include "protocol/stats.h"
#include "protocol/tag.h"
#include "protocol/wire_types.h"

namespace vks::proto {

// ---- stream events --------------------------------------------------------------------------

enum class StreamEventType { kQueued, kScheduled, kPreempted, kToken, kError, kFinished, kToolCall, kProgress };
// "queued", "scheduled", "preempted", "token", "error", "finished", "tool_call", "progress"
std::string_view stream_event_name(StreamEventType t);
std::optional<StreamEventType> parse_stream_event_name(std::string_view name);
std::string_view finish_reason_wire_name(FinishReason r);  // "stop", "length", "cancelled", "deadline", "error", "tool_calls"
std::optional<FinishReason> parse_finish_reason(std::string_view name);

struct StreamEvent {
  StreamEventType type = StreamEventType::kToken;
  std::string id;
  int64_t seq = 0;                        // 0, 1, 2, ... per request; finished carries the last;
                                          // progress is not numbered (-1, no seq on the wire)
  int32_t queue_position = -1;            // queued
  bool first = false;                     // token: the request's first token event
  std::vector<TokenId> ids;               // token
  std::string text;                       // token: UTF-8 text delta (may be empty)
  std::vector<GeneratedToken> logprobs;   // token: one per id when the request asked for logprobs
  FinishReason reason = FinishReason::kStop;  // finished
  Usage usage;                            // finished; progress: prompt_tokens, cached_tokens
  int32_t prompt_tokens_done = 0;         // progress: prompt tokens read so far (cached ones included)
  Timings timings;                        // finished
  std::string model;                      // queued, finished: the model serving the request
  WireError error_code = WireError::kInternal;  // error
  std::string error_message;              // error
  // tool_call (a chat request with tools; docs/PROTOCOL.md 4.x): the call's place in the reply
  // (0, 1, ...), its id, the function's name and its arguments as compact JSON object text.
  int32_t call_index = 0;
  std::string call_id;
  std::string call_name;
  std::string call_arguments;
};

std::string encode_event(const StreamEvent& ev);

// ---- direct answers -------------------------------------------------------------------------

struct ModelInfo {
  std::string name;
  std::string architecture;
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  int32_t dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t hidden_dim = 0;
  // Weight-matrix parameters (a tied output counted once) and those one token uses; the experts
  // of a mixture-of-experts model (0 for a dense one), how many each token runs and their rows.
  int64_t parameters = 0;
  int64_t active_parameters = 0;
  int32_t n_experts = 0;
  int32_t n_experts_used = 0;
  int32_t expert_hidden_dim = 0;
  TokenId bos = -1;
  TokenId eos = -1;
  bool add_bos = true;
  std::string device;  // device the engine runs on ("cpu" for the reference fallback)
  std::string kv_type;             // the KV pools' element types ("f16", "q8_0", "f32", "q8_0/f16")
  int64_t kv_bytes_per_token = 0;  // one token's keys and values, every layer
};

struct HelloAnswer {
  int32_t version = 1;
  std::string server;          // e.g. "vkstreamd 0.1.0"
  ModelInfo model;
  ProtocolLimits limits;
  std::string pub_endpoint;    // ZeroMQ XPUB endpoint ("" if none)
  std::string router_endpoint; // ZeroMQ ROUTER endpoint ("" if none)
  int64_t retention_ms = 0;    // how long finished requests stay available for replay/late follow
};
struct AcceptedAnswer {
  std::string id;
  std::string topic;
  int32_t queue_position = 0;
  int32_t prompt_tokens = 0;
  bool detached = false;
  std::string model = {};  // the model serving it
};
struct CancelledAnswer { std::string id; };

enum class RequestState { kQueued, kRunning, kFinished };
std::string_view request_state_name(RequestState s);  // "queued", "running", "finished"
std::optional<RequestState> parse_request_state(std::string_view name);

struct StatusAnswer {
  std::string id;
  RequestState state = RequestState::kQueued;
  std::string topic;
  int64_t last_seq = -1;         // seq of the last event published so far (-1: none yet)
  int32_t queue_position = -1;   // queued only
  int32_t prompt_tokens = 0;
  int32_t generated_tokens = 0;
  bool detached = false;
  std::optional<FinishReason> reason;  // finished only
};
struct StatsAnswer {
  StatsFormat format = StatsFormat::kMap;
  StatsSnapshot stats;   // kMap
  std::string text;      // kPrometheus
};
struct ErrorAnswer {
  ProtocolError error;
  std::string id;             // request id when the error concerns one
  int32_t retry_after_ms = 0; // overloaded / too_many_requests: suggested wait (0 = none)
};
struct TokenizeAnswer { std::vector<TokenId> ids; };
struct DetokenizeAnswer { std::string text; };
struct ModelAnswer { ModelInfo model; };
// One entry of the `models` answer: a model the server can serve, and whether it is loaded.
struct ServableModelEntry {
  std::string name;        // what requests name it by (file stem, or owner/repo:quant when pulled)
  std::string path;
  uint64_t size_bytes = 0;  // the GGUF file
  bool loaded = false;
  bool loading = false;
  bool pinned = false;      // --model: loaded at start, never evicted
  bool is_default = false;  // what a request without `model` gets
  int32_t running = 0;      // requests in flight on it
  // Loaded models: the memory it holds (weights, KV pool) and when it unloads once idle (-1: never).
  uint64_t resident_bytes = 0;
  int64_t expires_in_ms = -1;
  std::string device;
};
struct ModelsAnswer {
  std::vector<ServableModelEntry> models;
  int32_t max_loaded = 0;
};
struct LoadedAnswer {
  std::string model;
  double load_ms = 0;  // 0 when it was already loaded
};
struct UnloadedAnswer {
  std::string model;
  bool was_loaded = false;
};
// `pull`'s answer: the model is in the cache and servable under `model`.
struct PulledAnswer {
  std::string model;              // the name requests use from now on (may differ from what was asked)
  std::string path;
  uint64_t size_bytes = 0;
  uint64_t downloaded_bytes = 0;  // fetched by this pull (0: it was there already)
};
// While a `pull` with stream: true downloads (same tag as the request, before its `pulled`).
struct PullProgressAnswer {
  std::string model;       // as the request named it
  uint64_t completed = 0;  // bytes in the cache so far
  uint64_t total = 0;      // 0: not known yet
};
struct DeletedAnswer {
  std::string model;
};
struct EmbedAnswer {
  std::string id;
  std::vector<std::vector<float>> embeddings;  // one per input, in order (float32 on the wire)
  Usage usage;                                 // prompt_tokens: all inputs together
};
struct ReplayAnswer {
  std::string id;
  std::vector<StreamEvent> events;  // seq ≥ from_seq, ascending, contiguous
  int64_t next_seq = 0;             // seq after the last event returned
  bool finished = false;            // the request's last event (finished) has been published
  bool truncated = false;           // more events exist: ask again from next_seq
};

using AnswerBody = std::variant<HelloAnswer, AcceptedAnswer, CancelledAnswer, StatusAnswer,
                                StatsAnswer, ErrorAnswer, TokenizeAnswer, DetokenizeAnswer,
                                ModelAnswer, ReplayAnswer, StreamEvent, EmbedAnswer, ModelsAnswer,
                                LoadedAnswer, UnloadedAnswer, PulledAnswer, PullProgressAnswer, DeletedAnswer>;

struct ServerMessage {
  Tag tag;           // echoed tag (answers only)
  AnswerBody body;
};

std::string_view answer_type_name(const AnswerBody& body);  // the wire "type"

// Encodes any answer or event (tag omitted when none).
std::string encode_answer(const AnswerBody& body, const Tag& tag = {});
inline std::string encode_message(const ServerMessage& m) { return encode_answer(m.body, m.tag); }
// Convenience for the common error answer.
std::string encode_error(const ProtocolError& error, const Tag& tag = {}, std::string_view id = {},
                         int32_t retry_after_ms = 0);
// Replay answer from already-encoded event payloads (as stored for PUB / replay): each must be one
// msgpack map produced by encode_event; they are embedded verbatim. Stops before the payload that
// would take the answer above max_bytes (truncated = true then); always includes at least one
// event when any is given so that progress is guaranteed for frames ≥ one event.
std::string encode_replay_raw(std::string_view id, std::span<const std::string> event_payloads,
                              int64_t first_seq, bool finished, const Tag& tag,
                              size_t max_bytes = SIZE_MAX);

// Client side: parses any server message. Unknown fields are ignored; a message with an unknown
// "type" is unknown_type (clients should skip it: newer servers may add event types).
Result<ServerMessage> parse_server_message(std::string_view payload);

}  // namespace vks::proto
