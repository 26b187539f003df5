#pragma once
// Plain data of the protocol as the client library sees it (docs/PROTOCOL.md).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vkstream/value.h"

namespace vkstream {

// Where the daemon listens. Exactly one of unix_socket / zmq_endpoint is used for requests;
// pub_endpoint is the XPUB socket that subscribers connect to (empty: taken from `hello`, else the
// default beside the ROUTER endpoint).
struct Endpoint {
  std::string unix_socket;   // e.g. $XDG_RUNTIME_DIR/vkstream/vkstream.sock
  std::string zmq_endpoint;  // e.g. ipc://$XDG_RUNTIME_DIR/vkstream/router.zmq
  std::string pub_endpoint;  // e.g. ipc://$XDG_RUNTIME_DIR/vkstream/pub.zmq
};

// Default paths (TEAM.md): $XDG_RUNTIME_DIR/vkstream/... for a user, /run/vkstream/... otherwise.
std::string default_runtime_dir();
Endpoint default_endpoint();

// Every generate parameter of the protocol; unset optionals are not sent (the daemon's default).
// One turn of a conversation for a `chat` request.
struct ChatMessage {
  std::string role;     // "system", "user", "assistant", ...
  std::string content;
  std::string tool_calls = {};    // an assistant turn's calls: JSON text [{"id", "type", "function": {...}}]
  std::string tool_call_id = {};  // a "tool" turn: the call it answers
  std::string name = {};          // a "tool" turn: the function's name
};

// embed (docs/PROTOCOL.md 3.11): one vector per text.
struct EmbedOptions {
  bool normalize = true;   // false: the raw pooled vectors
  std::string pooling;     // "" = the model's (mean for generative models), or "mean" / "cls" / "last"
  std::optional<bool> add_bos;
  std::string model;                 // "" = the daemon's default model
  std::optional<double> keep_alive;  // seconds, as GenerateOptions::keep_alive
};

struct GenerateOptions {
  std::string prompt;                    // used when prompt_ids is empty
  std::vector<int32_t> prompt_ids;
  std::optional<bool> add_bos;
  std::optional<int32_t> max_tokens;
  std::optional<double> temperature;     // 0 = greedy
  std::optional<int32_t> top_k;
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  std::optional<int32_t> penalty_last_n;
  std::vector<std::pair<int32_t, double>> logit_bias;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  std::optional<bool> ignore_eos;
  std::optional<int32_t> min_tokens;
  std::optional<int32_t> logprobs;       // top-N alternatives, 0..20
  std::optional<int32_t> priority;
  std::optional<int64_t> deadline_ms;    // relative
  // Speculative decoding where the daemon runs it: 0 = off for this request, 1..16 = the most
  // tokens drafted a step, -1 = on with the daemon's draft length; unset = the daemon's setting.
  std::optional<int32_t> speculative;
  std::string id;                        // optional client-chosen id
  std::optional<bool> detached;          // survives this connection's close
  std::optional<bool> stream;            // token events on this connection (default true)
  // Constrained output (at most one): GBNF grammar text, or a JSON Schema as JSON text.
  std::optional<std::string> grammar;
  std::optional<std::string> json_schema;
  // Chat: when `messages` is not empty the request is a `chat`: the daemon renders the model's chat
  // template (or `chat_template`) and stops at the model's end-of-turn tokens; prompt, prompt_ids
  // and add_bos are then not sent.
  std::vector<ChatMessage> messages;
  std::optional<bool> add_generation_prompt;  // default true
  std::optional<std::string> chat_template;   // a Jinja template for this request only
  // Chat with tools (docs/PROTOCOL.md 3.10): the reply's calls come as tool_call events
  // (Completion::tool_calls). tools: JSON text of an OpenAI-shaped array ("" = none).
  std::string tools;
  std::string tool_choice;  // "" (auto), "auto", "none", "required", "function" (with tool_name)
  std::string tool_name;
  std::optional<bool> parallel_tool_calls;
  // The served model by name (docs/PROTOCOL.md 3.12): "" = the daemon's default. The first request
  // for a model that is not loaded waits for its load.
  std::string model;
  // Seconds the model stays loaded once idle after this request: 0 = unload once idle, negative =
  // never by itself; unset = the daemon's --keep-alive.
  std::optional<double> keep_alive;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t generated_tokens = 0;
};

struct Timings {
  double queue_ms = 0;
  double ttft_ms = 0;
  double total_ms = 0;
  int32_t draft_tokens = 0;     // speculative decoding: draft tokens verified
  int32_t accepted_tokens = 0;  // of them, accepted
};

struct TopLogprob {
  int32_t id = 0;
  double logprob = 0;
};
struct TokenLogprobs {
  int32_t id = 0;
  double logprob = 0;
  std::vector<TopLogprob> top;
};

// kOther: a type this library does not know (a newer daemon's): skip it. kProgress comes last so
// that the values of the others stay as they were.
enum class EventKind { kQueued, kScheduled, kPreempted, kToken, kFinished, kError, kToolCall, kOther, kProgress };

// A tool call of a chat reply with tools (the `tool_call` event).
struct ToolCall {
  int64_t index = 0;      // its place in the reply: 0, 1, ...
  std::string id;         // "call_<request id>_<index>"
  std::string name;       // the function
  std::string arguments;  // its arguments: JSON object text
};

// One stream event of a request (the same on the connection, the PUB topic and in `replay`).
struct Event {
  EventKind kind = EventKind::kOther;
  std::string type;                    // wire name
  std::string id;                      // request id
  int64_t seq = -1;                    // per-request sequence number, from 0; -1: progress (not numbered)
  int64_t queue_position = -1;         // queued
  std::vector<int32_t> ids;            // token
  std::string text;                    // token: UTF-8 text delta
  std::vector<TokenLogprobs> logprobs; // token, when requested
  std::string finish_reason;           // finished: stop, length, cancelled, deadline, error, tool_calls
  ToolCall tool_call;                  // tool_call
  Usage usage;                         // finished; progress: prompt_tokens, cached_tokens
  int64_t prompt_tokens_done = 0;      // progress: prompt tokens read so far (cached ones included)
  Timings timings;                     // finished
  std::string error_code;              // error
  std::string error_message;           // error
  Value raw;                           // the whole message
  // When the library read it from the socket (events wait in a per-connection queue until taken,
  // so latency measurements should use this, not the time next_event() returned).
  std::chrono::steady_clock::time_point received_at{};

  bool is_last() const { return kind == EventKind::kFinished; }
};

struct Accepted {
  std::string id;
  std::string topic;
  int64_t queue_position = 0;
  int64_t prompt_tokens = 0;
  std::string model;  // the model serving it ("" from a daemon that does not say)
  Value raw;
};

// One entry of `models` (docs/PROTOCOL.md 4.11): a model the daemon can serve.
struct ServedModel {
  std::string name;  // what GenerateOptions::model names it by
  std::string path;
  uint64_t size_bytes = 0;
  bool loaded = false;
  bool loading = false;
  bool pinned = false;      // given with --model: never evicted
  bool is_default = false;  // what a request without `model` gets
  int64_t running = 0;      // requests in flight on it
  uint64_t resident_bytes = 0;
  int64_t expires_in_ms = -1;  // when its keep-alive unloads it once idle; -1: never
  std::string device;
};
struct ModelList {
  std::vector<ServedModel> models;
  int64_t max_loaded = 0;
};
struct LoadResult {
  std::string model;
  double load_ms = 0;  // 0 when it was already loaded
};
struct UnloadResult {
  std::string model;
  bool was_loaded = false;
};

// The end of a request as seen by generate(): text and ids concatenated from every token event.
struct Completion {
  std::string id;
  std::string text;
  std::vector<int32_t> ids;
  std::string finish_reason;
  Usage usage;
  Timings timings;
  std::vector<ToolCall> tool_calls;  // a chat reply with tools: its calls (text holds the raw reply)
};

struct Hello {
  int64_t version = 0;
  std::string server;
  std::string pub_endpoint;
  Value model;
  Value limits;
  Value raw;
};

struct RequestStatus {
  std::string id;
  std::string state;    // queued, running, finished
  std::string topic;    // when the daemon reports it
  int64_t seq = -1;     // last sequence number published so far
  Value raw;
};

struct Replay {
  std::string id;
  std::vector<Event> events;  // seq >= from_seq, ascending, contiguous
  int64_t next_seq = 0;       // seq after the last event returned
  bool finished = false;      // the request's finished event has been published
  bool truncated = false;     // more events exist: ask again from next_seq
};

// Parses one event map (a stream event, a replayed event or a published one).
Event parse_event(const Value& map);

}  // namespace vkstream
