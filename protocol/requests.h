#pragma once
// Client → server messages as typed structs: parse (server side, with field-level validation) and
// encode (client side). Every field, default and limit is documented in docs/PROTOCOL.md.
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/sched/engine.h"
#include "protocol/errors.h"
#include "protocol/limits.h"
#include "protocol/tag.h"

namespace vks::proto {

struct HelloRequest {
  int32_t version = 1;   // the client's protocol version (default: PROTOCOL_VERSION)
  std::string client;    // optional client name for the server's log (≤ 256 bytes)
};

struct GenerateMessage {
  // Engine request. request.id holds the client-chosen id ("" = server assigns one).
  // request.deadline is set from deadline_ms relative to the `now` given to the parser.
  GenerateRequest request;
  std::optional<int64_t> deadline_ms;  // as sent (relative, milliseconds, 1..max_deadline_ms)
  bool detached = false;  // true: survives the submitting connection's close
  bool stream = true;     // false: no events on the submitting connection (only `accepted`);
                          // follow the PUB topic or use replay/status instead
};

struct CancelRequest { std::string id; };
struct StatusRequest { std::string id; };

enum class StatsFormat { kMap, kPrometheus };
struct StatsRequest { StatsFormat format = StatsFormat::kMap; };

struct TokenizeRequest {
  std::string text;
  bool add_bos = true;
  bool parse_special = false;
};
struct DetokenizeRequest { std::vector<TokenId> ids; };
struct ModelRequest {};
struct ReplayRequest {
  std::string id;
  int64_t from_seq = 0;
};

// `chat` (docs/PROTOCOL.md 3.10): a conversation the server renders with the model's chat template,
// tokenizes and generates from. The generation fields are generate's; generate.request carries no
// prompt (the server fills prompt_ids once rendered).
struct ChatTurn {
  std::string role;
  std::string content;
};
struct ChatRequest {
  GenerateMessage generate;
  std::vector<ChatTurn> messages;
  bool add_generation_prompt = true;
  std::optional<std::string> chat_template;  // a template for this request instead of the model's
};
inline constexpr size_t kMaxChatMessages = 1024;
inline constexpr size_t kMaxChatTemplateBytes = 65536;

using RequestBody = std::variant<HelloRequest, GenerateMessage, CancelRequest, StatusRequest,
                                 StatsRequest, TokenizeRequest, DetokenizeRequest, ModelRequest,
                                 ReplayRequest, ChatRequest>;

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
// `now` anchors deadline_ms. Never throws.
Result<Request> parse_request(std::string_view payload, const ProtocolLimits& limits,
                              std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

// When a request fails to parse, the tag may still be recoverable (a map with a valid "tag");
// servers echo it in the error answer. Tag::none() otherwise. Never throws.
Tag peek_tag(std::string_view payload);

// Client side: one msgpack map payload (no frame header) for a request. Generate encodes every
// field of GenerateRequest (defaults included); prompt_ids when non-empty, else prompt text;
// logprobs only when ≥ 0; seed only when set; deadline_ms when set.
std::string encode_request(const Request& request);
std::string encode_request(const RequestBody& body, const Tag& tag = {});

}  // namespace vks::proto
