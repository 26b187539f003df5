#pragma once
// Client → server messages as typed structs: parse (server side, with field-level validation) and
// encode (client side). Every field, default and limit is documented in docs/PROTOCOL.md.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/errors.h"
#include "protocol/limits.h"
#include "protocol/tag.h"
#include "protocol/wire_types.h"

namespace vks::proto {

struct HelloRequest {
  int32_t version = 1;   // the client's protocol version (default: PROTOCOL_VERSION)
  std::string client;    // optional client name for the server's log (≤ 256 bytes)
};

// A generate request as sent: every optional field that is unset was absent on the wire and gets the
// server's default (docs/PROTOCOL.md 3.2; ranges in protocol/param_ranges.h). Exactly one of
// prompt / prompt_ids is used (prompt_ids when non-empty).
struct GenerateRequest {
  std::string prompt;
  std::vector<TokenId> prompt_ids;
  std::optional<bool> add_bos;
  std::optional<int32_t> max_tokens;
  std::optional<int32_t> min_tokens;
  // The request's own context: prompt and generated tokens together (Ollama's options.num_ctx);
  // at most the model's KV pool (hello's max_prompt_tokens), checked by the server. Absent: the pool.
  std::optional<int32_t> max_context_tokens;
  std::optional<double> temperature;
  std::optional<int32_t> top_k;
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  std::optional<int32_t> penalty_last_n;
  std::vector<std::pair<TokenId, double>> logit_bias;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  std::vector<TokenId> stop_token_ids;
  std::optional<bool> ignore_eos;
  std::optional<int32_t> logprobs;     // absent: no logprobs at all
  std::optional<int32_t> priority;
  // Speculative decoding (prompt lookup or a draft model): false = off (0), true = on with the
  // server's draft length (-1), an integer 0..16 = that draft length; absent = the server's setting.
  std::optional<int32_t> speculative;
  std::optional<int64_t> deadline_ms;  // relative, milliseconds, 1..max_deadline_ms
  std::string id;                      // client-chosen id ("" = server assigns one)
  std::optional<bool> detached;        // true: survives the submitting connection's close
  std::optional<bool> stream;          // false: no events on the submitting connection (only
                                       // `accepted`); follow the PUB topic or use replay/status
  // Constrained output (docs/PROTOCOL.md 3.2): a GBNF grammar (start rule `root`) or a JSON Schema
  // as JSON text; at most one, "" = none. Compiled by the server, which rejects a bad one.
  std::string grammar;
  std::string json_schema;
  // The served model by name (docs/PROTOCOL.md "Models"): "" = the default (the first pinned model,
  // else the only one served). Loaded on first use.
  std::string model;
  // How long the model stays loaded after this request (Ollama's keep_alive), in seconds: 0 = unload
  // once idle, negative = until evicted or unloaded; absent = the server's --keep-alive.
  std::optional<double> keep_alive;

  bool is_detached() const { return detached.value_or(false); }
  bool is_streamed() const { return stream.value_or(true); }
  bool wants_logprobs() const { return logprobs.has_value(); }
};
using GenerateMessage = GenerateRequest;  // the name older code uses

struct CancelRequest { std::string id; };
struct StatusRequest { std::string id; };

enum class StatsFormat { kMap, kPrometheus };
struct StatsRequest { StatsFormat format = StatsFormat::kMap; };

// `model` members are initialized here so that {text, ...} and {ids} still initialize without warnings.
struct TokenizeRequest {
  std::string text;
  std::optional<bool> add_bos = std::nullopt;  // unset: the model's add_bos_token
  bool parse_special = false;
  std::string model = {};  // "" = the default model
};
struct DetokenizeRequest {
  std::vector<TokenId> ids;
  std::string model = {};  // "" = the default model
};
struct ModelRequest {
  std::string model;  // "" = the default model (answered without loading one that is not loaded)
};
// `models`: every model the server can serve, loaded or not (ModelsAnswer).
struct ModelsRequest {};
// `load`: loads a model now (answered when it is loaded: LoadedAnswer) and keeps it keep_alive.
struct LoadRequest {
  std::string model;
  std::optional<double> keep_alive;  // seconds, as GenerateRequest's
};
// `unload`: unloads a model once its running requests finish (UnloadedAnswer at once).
struct UnloadRequest {
  std::string model;
};
// `pull`: downloads a model into the server's model cache, as `vkstream pull` does (a Hugging
// Face OWNER/REPO[:QUANT] or an http(s) URL of a GGUF); answered `pulled` when it is servable, with
// `pull_progress` answers before it when `stream` is true.
struct PullRequest {
  std::string model;
  bool stream = false;
};
// `delete`: removes a model the server pulled (DeletedAnswer).
struct DeleteRequest {
  std::string model;
};
struct ReplayRequest {
  std::string id;
  int64_t from_seq = 0;
};

// `chat` (docs/PROTOCOL.md 3.10): a conversation the server renders with the model's chat template,
// tokenizes and generates from. The generation fields are generate's; `generate` carries no prompt
// (the server renders the messages into prompt ids).
struct ChatTurn {
  std::string role;
  std::string content;
  // An assistant turn's tool calls: JSON text of an OpenAI-shaped array
  // [{"id", "type": "function", "function": {"name", "arguments"}}] ("" = none). Initialized here
  // so that {role, content} still initializes a turn without warnings.
  std::string tool_calls = {};
  std::string tool_call_id = {};  // a "tool" turn: the call it answers
  std::string name = {};          // a "tool" turn: the function's name
  std::string reasoning_content = {};  // an assistant turn's reasoning, given back (Qwen3's templates render it)
};
// tool_choice (docs/PROTOCOL.md 3.10): "auto" (the model decides; calls are parsed from its
// answer), "none" (no tools offered), "required" (at least one call, grammar-enforced), or
// "function" with tool_name (that function, grammar-enforced).
inline constexpr std::string_view kToolChoices[] = {"auto", "none", "required", "function"};
struct ChatRequest {
  GenerateRequest generate;
  std::vector<ChatTurn> messages;
  bool add_generation_prompt = true;
  std::optional<std::string> chat_template;  // a template for this request instead of the model's
  std::string tools;                         // JSON text of the tools array ("" = none)
  std::string tool_choice;                   // "" = "auto" when tools are given
  std::string tool_name;                     // tool_choice "function": the function to call
  std::optional<bool> parallel_tool_calls;   // unset: true
  std::optional<bool> enable_thinking;       // the template's thinking switch (Qwen3); unset: its default

  bool has_tools() const { return !tools.empty() && tool_choice != "none"; }
};
inline constexpr size_t kMaxChatMessages = 1024;
inline constexpr size_t kMaxChatTemplateBytes = 65536;

// `embed` (docs/PROTOCOL.md 3.11): one vector per input, from texts (`input`, tokenized by the server)
// or token ids (`tokens`); exactly one of the two is non-empty. Answer: EmbedAnswer.
struct EmbedRequest {
  std::vector<std::string> input;
  std::vector<std::vector<TokenId>> tokens;
  std::optional<bool> add_bos;           // texts only; unset: the model's add_bos_token
  std::optional<bool> normalize;         // default true: each vector has unit L2 norm
  std::optional<std::string> pooling;    // "mean" | "cls" | "last" (default: the model's, mean for generative models)
  std::optional<int32_t> priority;
  std::optional<int64_t> deadline_ms;
  std::string id;                        // client-chosen id ("" = server assigns one)
  std::string model;                     // "" = the default model
  std::optional<double> keep_alive;      // seconds, as GenerateRequest's
};
inline constexpr size_t kMaxEmbedInputs = 2048;

using RequestBody = std::variant<HelloRequest, GenerateMessage, CancelRequest, StatusRequest,
                                 StatsRequest, TokenizeRequest, DetokenizeRequest, ModelRequest,
                                 ReplayRequest, ChatRequest, EmbedRequest, ModelsRequest, LoadRequest,
                                 UnloadRequest, PullRequest, DeleteRequest>;

struct Request {
  Tag tag;
  RequestBody body;
};

// The wire "type" string of a body ("hello", "generate", ...).
std::string_view request_type_name(const RequestBody& body);

// Parses one frame payload (exactly one msgpack map; trailing bytes are bad_frame).
// Errors: bad_frame (not msgpack / trailing bytes / nesting too deep), invalid_request (not a map,
// "type" missing or not a string), unknown_type, missing_field, invalid_field, prompt_too_long.
// The error's field names the offending field. Unknown fields are ignored.
// Never throws.
Result<Request> parse_request(std::string_view payload, const ProtocolLimits& limits);

// When a request fails to parse, the tag may still be recoverable (a map with a valid "tag");
// servers echo it in the error answer. Tag::none() otherwise. Never throws.
Tag peek_tag(std::string_view payload);

// Client side: one msgpack map payload (no frame header) for a request. Generate encodes the fields
// that are set (prompt_ids when non-empty, else prompt); absent ones get the server's defaults.
std::string encode_request(const Request& request);
std::string encode_request(const RequestBody& body, const Tag& tag = {});

}  // namespace vks::proto
