#include "protocol/requests.h"

#include "protocol/model_fields.h"

// GCC 12 reports a false -Wmaybe-uninitialized when the Request variant is moved into a Result at
// -O3 (it appeared when GenerateRequest grew the grammar/json_schema strings).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <type_traits>
#include <limits>

#include "protocol/embed_wire.h"
#include "protocol/json_text.h"
#include "protocol/msgpack_io.h"
#include "protocol/overloaded.h"
#include "protocol/param_ranges.h"
#include "protocol/topic.h"
#include "protocol/version.h"

namespace vks::proto {
namespace {

using detail::MapReader;
constexpr int64_t kMaxTokenId = std::numeric_limits<int32_t>::max();

using detail::Overloaded;

// Reads an array of token ids; element errors name "<key>.<index>".
bool read_token_ids(MapReader& r, std::string_view key, const msgpack::object& arr, std::vector<TokenId>& out) {
  out.clear();
  out.reserve(arr.via.array.size);
  for (uint32_t i = 0; i < arr.via.array.size; ++i) {
    int64_t v = 0;
    const std::string sub = std::string(key) + "." + std::to_string(i);
    if (!detail::as_int64(arr.via.array.ptr[i], v)) return r.fail_type(sub, "integer token id");
    if (v < 0 || v > kMaxTokenId) return r.fail(WireError::kInvalidField, sub, "token id " + std::to_string(v) + " out of range");
    out.push_back(static_cast<TokenId>(v));
  }
  return true;
}

bool read_request_id(MapReader& r, std::string& out) {
  if (!r.get_string("id", out, true, 1024)) return false;
  if (!is_valid_request_id(out))
    return r.fail(WireError::kInvalidField, "id", "request ids are 1..64 chars of [A-Za-z0-9._-]");
  return true;
}

bool read_logit_bias(MapReader& r, const ProtocolLimits& limits, GenerateRequest& g) {
  if (!r.has("logit_bias")) return true;
  const msgpack::object* m = nullptr;
  if (!r.get_map("logit_bias", m, true)) return false;
  if (m->via.map.size > static_cast<uint32_t>(limits.max_logit_bias))
    return r.fail(WireError::kInvalidField, "logit_bias",
                  std::to_string(m->via.map.size) + " entries exceed the limit of " + std::to_string(limits.max_logit_bias));
  g.logit_bias.clear();
  for (uint32_t i = 0; i < m->via.map.size; ++i) {
    const msgpack::object_kv& kv = m->via.map.ptr[i];
    int64_t id = -1;
    std::string_view ks;
    std::string key_text;
    if (detail::as_int64(kv.key, id)) {
      key_text = std::to_string(id);
    } else if (detail::as_string(kv.key, ks)) {
      key_text = detail::printable(ks.substr(0, 32));
      const auto [p, ec] = std::from_chars(ks.data(), ks.data() + ks.size(), id);
      if (ec != std::errc() || p != ks.data() + ks.size()) id = -1;
    } else {
      return r.fail(WireError::kInvalidField, "logit_bias", "keys must be token ids (integers or decimal strings)");
    }
    const std::string field = "logit_bias." + key_text;
    if (id < 0 || id > kMaxTokenId) return r.fail(WireError::kInvalidField, field, "not a valid token id");
    double bias = 0;
    if (!detail::as_double(kv.val, bias)) return r.fail(WireError::kInvalidField, field, "bias must be a number");
    if (!param::kLogitBias.contains(bias)) return r.fail(WireError::kInvalidField, field, param::kLogitBias.violation());
    g.logit_bias.emplace_back(static_cast<TokenId>(id), bias);
  }
  return true;
}

bool read_stop_strings(MapReader& r, const ProtocolLimits& limits, GenerateRequest& g) {
  const msgpack::object* o = r.find("stop");
  if (!o) return true;
  g.stop.clear();
  auto add = [&](const msgpack::object& item, const std::string& field) {
    std::string_view s;
    if (!detail::as_string(item, s)) return r.fail(WireError::kInvalidField, field, "expected string, got " + std::string(detail::type_name(item)));
    if (s.empty()) return r.fail(WireError::kInvalidField, field, "stop strings must not be empty");
    if (s.size() > static_cast<size_t>(limits.max_stop_string_bytes))
      return r.fail(WireError::kInvalidField, field, "stop string of " + std::to_string(s.size()) +
                                                          " bytes exceeds " + std::to_string(limits.max_stop_string_bytes));
    g.stop.emplace_back(s);
    return true;
  };
  if (o->type == msgpack::type::STR) return add(*o, "stop");
  if (o->type != msgpack::type::ARRAY) return r.fail_type("stop", "string or array of strings");
  if (o->via.array.size > static_cast<uint32_t>(limits.max_stop_strings))
    return r.fail(WireError::kInvalidField, "stop", std::to_string(o->via.array.size) + " stop strings exceed the limit of " +
                                                        std::to_string(limits.max_stop_strings));
  for (uint32_t i = 0; i < o->via.array.size; ++i) {
    if (!add(o->via.array.ptr[i], "stop." + std::to_string(i))) return false;
  }
  return true;
}

// Optional numeric fields checked against protocol/param_ranges.h.
bool read_ranged(MapReader& r, const ParamRange& range, std::optional<double>& out) {
  const msgpack::object* o = r.find(range.name);
  if (!o) return true;
  double v = 0;
  if (!detail::as_double(*o, v)) return r.fail_type(range.name, "number");
  if (!range.contains(v)) {
    // The shortest text that reads back as v: "%g" said "got 100" for 100.0001 against "(0, 100]".
    char got[32];
    const auto [end, ec] = std::to_chars(got, got + sizeof got, v);
    return r.fail(WireError::kInvalidField, range.name, range.violation(std::string(got, ec == std::errc() ? end : got)));
  }
  out = v;
  return true;
}

bool read_ranged(MapReader& r, const ParamRange& range, std::optional<int32_t>& out) {
  if (!r.has(range.name)) return true;
  int32_t v = 0;
  if (!r.get_i32(range.name, v, true, static_cast<int32_t>(range.min), static_cast<int32_t>(range.max))) return false;
  out = v;
  return true;
}

bool read_opt_bool(MapReader& r, std::string_view key, std::optional<bool>& out) {
  if (!r.has(key)) return true;
  bool v = false;
  if (!r.get_bool(key, v, true)) return false;
  out = v;
  return true;
}

bool read_opt_i32(MapReader& r, std::string_view key, std::optional<int32_t>& out, int32_t min, int32_t max) {
  if (!r.has(key)) return true;
  int32_t v = 0;
  if (!r.get_i32(key, v, true, min, max)) return false;
  out = v;
  return true;
}

// The prompt of a generate request: exactly one of prompt / prompt_ids, and add_bos.
bool read_prompt(MapReader& r, const ProtocolLimits& limits, GenerateRequest& g) {
  const bool has_text = r.has("prompt");
  const bool has_ids = r.has("prompt_ids");
  if (has_text && has_ids) return r.fail(WireError::kInvalidField, "prompt_ids", "give either prompt or prompt_ids, not both");
  if (!has_text && !has_ids)
    return r.fail(WireError::kMissingField, "prompt", "one of prompt (string) or prompt_ids (array of token ids) is required");
  if (has_text) return r.get_string("prompt", g.prompt, true, limits.max_frame_bytes) && read_opt_bool(r, "add_bos", g.add_bos);
  const msgpack::object* arr = nullptr;
  if (!r.get_array("prompt_ids", arr, true, std::numeric_limits<uint32_t>::max())) return false;
  if (arr->via.array.size == 0) return r.fail(WireError::kInvalidField, "prompt_ids", "must not be empty");
  if (limits.max_prompt_tokens > 0 && arr->via.array.size > static_cast<uint32_t>(limits.max_prompt_tokens))
    return r.fail(WireError::kPromptTooLong, "prompt_ids",
                  std::to_string(arr->via.array.size) + " prompt tokens exceed max_prompt_tokens " +
                      std::to_string(limits.max_prompt_tokens));
  return read_token_ids(r, "prompt_ids", *arr, g.prompt_ids) && read_opt_bool(r, "add_bos", g.add_bos);
}

// json_schema: a map (the schema) or a string (its JSON text); kept as JSON text.
bool read_json_schema(MapReader& r, const ProtocolLimits& limits, std::string& out) {
  const msgpack::object* schema = r.find("json_schema");
  if (!schema) return true;
  if (schema->type == msgpack::type::STR) return r.get_string("json_schema", out, true, limits.max_frame_bytes);
  if (schema->type == msgpack::type::MAP || schema->type == msgpack::type::BOOLEAN) {
    std::string why;
    if (!msgpack_to_json_text(*schema, out, why)) return r.fail(WireError::kInvalidField, "json_schema", why);
    return true;
  }
  return r.fail_type("json_schema", "map (the schema) or string (its JSON text)");
}

// A JSON value the server reads as JSON (tools, tool calls): an array, or a string holding its text.
bool read_json_array_text(MapReader& r, std::string_view key, const ProtocolLimits& limits, std::string& out) {
  const msgpack::object* value = r.find(key);
  if (!value) return true;
  if (value->type == msgpack::type::STR) return r.get_string(key, out, true, limits.max_frame_bytes);
  if (value->type == msgpack::type::ARRAY) {
    std::string why;
    if (!msgpack_to_json_text(*value, out, why)) return r.fail(WireError::kInvalidField, key, why);
    return true;
  }
  return r.fail_type(key, "array or string (its JSON text)");
}

// The generation fields shared by generate and chat. with_prompt = false: chat (messages instead
// of a prompt; the chat template decides about BOS).
Result<GenerateRequest> parse_generate(MapReader& r, const ProtocolLimits& limits, bool with_prompt = true) {
  GenerateRequest g;
  auto fail = [&]() -> Result<GenerateRequest> { return r.take_error(); };

  if (!with_prompt) {
    for (const char* key : {"prompt", "prompt_ids"}) {  // add_bos is ignored: the template decides
      if (r.has(key)) {
        r.fail(WireError::kInvalidField, key, "a chat request takes messages, not a prompt");
        return fail();
      }
    }
  } else if (!read_prompt(r, limits, g)) {
    return fail();
  }

  const int32_t max_tokens_cap = limits.max_tokens > 0 ? limits.max_tokens : param_default::kMaxTokensCap;
  if (!read_opt_i32(r, "max_tokens", g.max_tokens, 1, max_tokens_cap)) return fail();
  if (!read_opt_i32(r, "min_tokens", g.min_tokens, 0, max_tokens_cap)) return fail();
  if (!read_opt_i32(r, "max_context_tokens", g.max_context_tokens, 2, std::numeric_limits<int32_t>::max())) return fail();  // a token to prompt, one to generate
  // Unset max_tokens: generate until the context is full (the engine checks min_tokens against the
  // room left once it knows the prompt's length).
  if (g.max_tokens && g.min_tokens.value_or(0) > *g.max_tokens) {
    r.fail(WireError::kInvalidField, "min_tokens", "must not exceed max_tokens (" + std::to_string(*g.max_tokens) + ")");
    return fail();
  }

  if (!read_ranged(r, param::kTemperature, g.temperature)) return fail();
  if (!read_ranged(r, param::kTopK, g.top_k)) return fail();
  if (!read_ranged(r, param::kTopP, g.top_p)) return fail();
  if (!read_ranged(r, param::kMinP, g.min_p)) return fail();
  if (!read_ranged(r, param::kRepetitionPenalty, g.repetition_penalty)) return fail();
  if (!read_ranged(r, param::kPresencePenalty, g.presence_penalty)) return fail();
  if (!read_ranged(r, param::kFrequencyPenalty, g.frequency_penalty)) return fail();
  if (!read_ranged(r, param::kPenaltyLastN, g.penalty_last_n)) return fail();
  if (!read_logit_bias(r, limits, g)) return fail();
  if (r.has("seed")) {
    uint64_t seed = 0;
    if (!r.get_u64("seed", seed, true)) return fail();
    g.seed = seed;
  }

  if (!read_stop_strings(r, limits, g)) return fail();
  const msgpack::object* stop_ids = nullptr;
  if (!r.get_array("stop_token_ids", stop_ids, false, static_cast<size_t>(limits.max_stop_token_ids))) return fail();
  if (stop_ids && !read_token_ids(r, "stop_token_ids", *stop_ids, g.stop_token_ids)) return fail();
  if (!read_opt_bool(r, "ignore_eos", g.ignore_eos)) return fail();

  if (!read_opt_i32(r, "logprobs", g.logprobs, 0, limits.max_logprobs)) return fail();
  if (!read_ranged(r, param::kPriority, g.priority)) return fail();
  if (const msgpack::object* spec = r.find("speculative")) {
    if (spec->type == msgpack::type::BOOLEAN) {
      g.speculative = spec->via.boolean ? -1 : 0;
    } else if (!read_opt_i32(r, "speculative", g.speculative, 0, 16)) {
      return fail();
    }
  }
  if (r.has("deadline_ms")) {
    int64_t ms = 0;
    if (!r.get_int("deadline_ms", ms, true, 1, limits.max_deadline_ms)) return fail();
    g.deadline_ms = ms;
  }
  if (r.has("id")) {
    if (!r.get_string("id", g.id, true, 1024)) return fail();
    if (!is_valid_client_id(g.id)) {
      r.fail(WireError::kInvalidField, "id", "client-chosen ids are 1..64 chars of [A-Za-z0-9._-]");
      return fail();
    }
  }
  if (!read_opt_bool(r, "detached", g.detached)) return fail();
  if (!read_opt_bool(r, "stream", g.stream)) return fail();
  // Constrained output: compiled (and a bad one rejected with its position) by the server.
  if (!r.get_string("grammar", g.grammar, false, limits.max_frame_bytes)) return fail();
  if (!read_json_schema(r, limits, g.json_schema)) return fail();
  if (!detail::read_model_name(r, g.model)) return fail();
  if (!detail::read_keep_alive(r, g.keep_alive)) return fail();
  return g;
}

Result<ChatRequest> parse_chat(MapReader& r, const ProtocolLimits& limits) {
  auto fail = [&]() -> Result<ChatRequest> { return r.take_error(); };
  ChatRequest c;
  const msgpack::object* arr = nullptr;
  if (!r.get_array("messages", arr, true, kMaxChatMessages)) return fail();
  if (arr->via.array.size == 0) {
    r.fail(WireError::kInvalidField, "messages", "must hold at least one message");
    return fail();
  }
  for (uint32_t i = 0; i < arr->via.array.size; ++i) {
    const msgpack::object& item = arr->via.array.ptr[i];
    const std::string key = "messages." + std::to_string(i);
    if (item.type != msgpack::type::MAP) {
      r.fail(WireError::kInvalidField, key, std::string("must be a map {role, content}, not ") + std::string(detail::type_name(item)));
      return fail();
    }
    MapReader m(item, r.field_name(key));
    ChatTurn turn;
    if (!m.get_string("role", turn.role, true, 64, false) || !read_json_array_text(m, "tool_calls", limits, turn.tool_calls) ||
        !m.get_string("content", turn.content, turn.tool_calls.empty(), limits.max_frame_bytes) ||
        !m.get_string("tool_call_id", turn.tool_call_id, false, 256) || !m.get_string("name", turn.name, false, 256) ||
        !m.get_string("reasoning_content", turn.reasoning_content, false, limits.max_frame_bytes)) {
      return r.fail_from(m), fail();
    }
    c.messages.push_back(std::move(turn));
  }
  if (!r.get_bool("add_generation_prompt", c.add_generation_prompt, false)) return fail();
  if (!read_json_array_text(r, "tools", limits, c.tools)) return fail();
  if (!r.get_string("tool_choice", c.tool_choice, false, 16)) return fail();
  if (!c.tool_choice.empty() && std::find(std::begin(kToolChoices), std::end(kToolChoices), c.tool_choice) == std::end(kToolChoices)) {
    r.fail(WireError::kInvalidField, "tool_choice", "must be one of auto, none, required, function");
    return fail();
  }
  if (!r.get_string("tool_name", c.tool_name, false, 256)) return fail();
  if ((c.tool_choice == "function") != !c.tool_name.empty()) {
    r.fail(WireError::kInvalidField, c.tool_name.empty() ? "tool_name" : "tool_choice",
           "tool_choice \"function\" and tool_name go together");
    return fail();
  }
  if (!read_opt_bool(r, "parallel_tool_calls", c.parallel_tool_calls)) return fail();
  if (!read_opt_bool(r, "enable_thinking", c.enable_thinking)) return fail();
  if ((c.tool_choice == "required" || c.tool_choice == "function") && c.tools.empty()) {
    r.fail(WireError::kInvalidField, "tool_choice", "tool_choice " + c.tool_choice + " needs tools");
    return fail();
  }
  if (r.has("chat_template")) {
    std::string source;
    if (!r.get_string("chat_template", source, true, kMaxChatTemplateBytes, false)) return fail();
    c.chat_template = std::move(source);
  }
  Result<GenerateRequest> g = parse_generate(r, limits, /*with_prompt=*/false);
  if (!g) return g.error();
  c.generate = std::move(g.value());
  return c;
}

Result<RequestBody> parse_body(std::string_view type, MapReader& r, const ProtocolLimits& limits) {
  auto fail = [&]() -> Result<RequestBody> { return r.take_error(); };
  if (type == "chat") {
    Result<ChatRequest> c = parse_chat(r, limits);
    if (!c) return c.error();
    return RequestBody(std::move(c.value()));
  }
  if (type == "generate") {
    Result<GenerateRequest> g = parse_generate(r, limits);
    if (!g) return g.error();
    return RequestBody(std::move(g.value()));
  }
  if (type == "hello") {
    HelloRequest h;
    h.version = PROTOCOL_VERSION;
    if (!r.get_i32("version", h.version, false, 1, std::numeric_limits<int32_t>::max())) return fail();
    if (!r.get_string("client", h.client, false, 256)) return fail();
    return RequestBody(std::move(h));
  }
  if (type == "cancel") {
    CancelRequest c;
    if (!read_request_id(r, c.id)) return fail();
    return RequestBody(std::move(c));
  }
  if (type == "status") {
    StatusRequest s;
    if (!read_request_id(r, s.id)) return fail();
    return RequestBody(std::move(s));
  }
  if (type == "stats") {
    StatsRequest s;
    std::string format = "map";
    if (!r.get_string("format", format, false, 32)) return fail();
    if (format == "map") {
      s.format = StatsFormat::kMap;
    } else if (format == "prometheus") {
      s.format = StatsFormat::kPrometheus;
    } else {
      r.fail(WireError::kInvalidField, "format", "must be \"map\" or \"prometheus\"");
      return fail();
    }
    return RequestBody(s);
  }
  if (type == "tokenize") {
    TokenizeRequest t;
    if (!r.get_string("text", t.text, true, limits.max_frame_bytes)) return fail();
    if (!detail::read_model_name(r, t.model)) return fail();
    if (!read_opt_bool(r, "add_bos", t.add_bos)) return fail();
    if (!r.get_bool("parse_special", t.parse_special, false)) return fail();
    return RequestBody(std::move(t));
  }
  if (type == "detokenize") {
    DetokenizeRequest d;
    const msgpack::object* arr = nullptr;
    if (!r.get_array("ids", arr, true, static_cast<size_t>(limits.max_detokenize_ids))) return fail();
    if (!read_token_ids(r, "ids", *arr, d.ids)) return fail();
    if (!detail::read_model_name(r, d.model)) return fail();
    return RequestBody(std::move(d));
  }
  if (type == "model") {
    ModelRequest m;
    if (!detail::read_model_name(r, m.model)) return fail();
    return RequestBody(std::move(m));
  }
  if (type == "models") return RequestBody(ModelsRequest{});
  if (type == "load") {
    LoadRequest l;
    if (!detail::read_model_name(r, l.model, /*required=*/true)) return fail();
    if (!detail::read_keep_alive(r, l.keep_alive)) return fail();
    return RequestBody(std::move(l));
  }
  if (type == "unload") {
    UnloadRequest u;
    if (!detail::read_model_name(r, u.model, /*required=*/true)) return fail();
    return RequestBody(std::move(u));
  }
  if (type == "pull") {
    PullRequest p;
    if (!detail::read_model_name(r, p.model, /*required=*/true)) return fail();
    if (!r.get_bool("stream", p.stream, false)) return fail();
    return RequestBody(std::move(p));
  }
  if (type == "delete") {
    DeleteRequest d;
    if (!detail::read_model_name(r, d.model, /*required=*/true)) return fail();
    return RequestBody(std::move(d));
  }
  if (type == "embed") {
    Result<EmbedRequest> e = detail::parse_embed(r, limits);
    if (!e) return e.error();
    return RequestBody(std::move(e.value()));
  }
  if (type == "replay") {
    ReplayRequest p;
    if (!read_request_id(r, p.id)) return fail();
    if (!r.get_int("from_seq", p.from_seq, false, 0, std::numeric_limits<int64_t>::max() / 2)) return fail();
    return RequestBody(std::move(p));
  }
  // The type came from the client and may be any bytes: quote it escaped (the answer must stay
  // valid UTF-8 for strict msgpack decoders).
  return make_error(WireError::kUnknownType, "unknown request type \"" + detail::printable(type.substr(0, 64)) + "\"",
                    "type");
}

}  // namespace

std::string_view request_type_name(const RequestBody& body) {
  return std::visit(Overloaded{
                        [](const HelloRequest&) { return std::string_view("hello"); },
                        [](const GenerateMessage&) { return std::string_view("generate"); },
                        [](const CancelRequest&) { return std::string_view("cancel"); },
                        [](const StatusRequest&) { return std::string_view("status"); },
                        [](const StatsRequest&) { return std::string_view("stats"); },
                        [](const TokenizeRequest&) { return std::string_view("tokenize"); },
                        [](const DetokenizeRequest&) { return std::string_view("detokenize"); },
                        [](const ModelRequest&) { return std::string_view("model"); },
                        [](const ReplayRequest&) { return std::string_view("replay"); },
                        [](const ChatRequest&) { return std::string_view("chat"); },
                        [](const EmbedRequest&) { return std::string_view("embed"); },
                        [](const ModelsRequest&) { return std::string_view("models"); },
                        [](const LoadRequest&) { return std::string_view("load"); },
                        [](const UnloadRequest&) { return std::string_view("unload"); },
                        [](const PullRequest&) { return std::string_view("pull"); },
                        [](const DeleteRequest&) { return std::string_view("delete"); },
                    },
                    body);
}

Result<Request> parse_request(std::string_view payload, const ProtocolLimits& limits) {
  try {
    Result<msgpack::object_handle> decoded = detail::decode(payload);
    if (!decoded) return decoded.error();
    const msgpack::object& root = decoded->get();
    if (root.type != msgpack::type::MAP)
      return make_error(WireError::kInvalidRequest,
                        "a message must be a msgpack map, got " + std::string(detail::type_name(root)));
    MapReader r(root);
    std::string type;
    {
      const msgpack::object* t = r.find("type");
      std::string_view tv;
      if (!t) return make_error(WireError::kInvalidRequest, "missing \"type\" (string)", "type");
      if (!detail::as_string(*t, tv))
        return make_error(WireError::kInvalidRequest, "\"type\" must be a string", "type");
      type.assign(tv.substr(0, 64));
    }
    Request req;
    std::optional<Tag> tag = detail::read_tag(root, static_cast<size_t>(limits.max_tag_bytes));
    if (!tag)
      return make_error(WireError::kInvalidField,
                        "tag: must be an integer or a string of at most " + std::to_string(limits.max_tag_bytes) + " bytes",
                        "tag");
    req.tag = std::move(*tag);
    Result<RequestBody> body = parse_body(type, r, limits);
    if (!body) return body.error();
    req.body = std::move(body.value());
    return req;
  } catch (const std::exception& e) {  // allocation failure or a msgpack surprise: never escape
    return make_error(WireError::kInternal, std::string("parser failure: ") + e.what());
  }
}

Tag peek_tag(std::string_view payload) {
  try {
    Result<msgpack::object_handle> decoded = detail::decode(payload);
    if (!decoded || decoded->get().type != msgpack::type::MAP) return Tag::none();
    std::optional<Tag> tag = detail::read_tag(decoded->get(), ProtocolLimits{}.max_tag_bytes);
    return tag ? *tag : Tag::none();
  } catch (const std::exception&) {
    return Tag::none();
  }
}

// ---- encoding (client side) -------------------------------------------------------------------

namespace {

template <class T>
void put_optional(detail::MapWriter& w, std::string_view key, const std::optional<T>& v) {
  if (!v) return;
  if constexpr (std::is_same_v<T, bool>) w.boolean(key, *v);
  else if constexpr (std::is_same_v<T, double>) w.f64(key, *v);
  else if constexpr (std::is_same_v<T, uint64_t>) w.u64(key, *v);
  else w.i64(key, *v);
}

// with_prompt = false: the generation fields of a chat request (its messages are encoded by the caller).
void encode_generate(detail::MapWriter& w, const GenerateRequest& g, bool with_prompt = true) {
  if (with_prompt) {
    if (!g.prompt_ids.empty()) {
      w.raw("prompt_ids", detail::pack_int_array(g.prompt_ids.data(), g.prompt_ids.size()));
    } else {
      w.str("prompt", g.prompt);
    }
    put_optional(w, "add_bos", g.add_bos);
  }
  put_optional(w, "max_tokens", g.max_tokens);
  put_optional(w, "min_tokens", g.min_tokens);
  put_optional(w, "max_context_tokens", g.max_context_tokens);
  put_optional(w, "temperature", g.temperature);
  put_optional(w, "top_k", g.top_k);
  put_optional(w, "top_p", g.top_p);
  put_optional(w, "min_p", g.min_p);
  put_optional(w, "repetition_penalty", g.repetition_penalty);
  put_optional(w, "presence_penalty", g.presence_penalty);
  put_optional(w, "frequency_penalty", g.frequency_penalty);
  put_optional(w, "penalty_last_n", g.penalty_last_n);
  if (!g.logit_bias.empty()) {
    auto& pk = w.key("logit_bias");
    pk.pack_map(static_cast<uint32_t>(g.logit_bias.size()));
    for (const auto& [id, bias] : g.logit_bias) {
      pk.pack_int32(id);
      detail::pack_f64(w.body(), bias);
    }
  }
  put_optional(w, "seed", g.seed);
  if (!g.stop.empty()) {
    auto& pk = w.key("stop");
    pk.pack_array(static_cast<uint32_t>(g.stop.size()));
    for (const std::string& str : g.stop) detail::pack_str(pk, str);
  }
  if (!g.stop_token_ids.empty())
    w.raw("stop_token_ids", detail::pack_int_array(g.stop_token_ids.data(), g.stop_token_ids.size()));
  put_optional(w, "ignore_eos", g.ignore_eos);
  if (g.speculative && *g.speculative < 0) {
    w.boolean("speculative", true);
  } else {
    put_optional(w, "speculative", g.speculative);
  }
  put_optional(w, "logprobs", g.logprobs);
  put_optional(w, "priority", g.priority);
  put_optional(w, "deadline_ms", g.deadline_ms);
  if (!g.id.empty()) w.str("id", g.id);
  put_optional(w, "detached", g.detached);
  put_optional(w, "stream", g.stream);
  if (!g.grammar.empty()) w.str("grammar", g.grammar);
  if (!g.json_schema.empty()) w.str("json_schema", g.json_schema);
  detail::write_model_fields(w, g.model, g.keep_alive);
}

}  // namespace

std::string encode_request(const RequestBody& body, const Tag& tag) {
  detail::MapWriter w;
  w.str("type", request_type_name(body));
  w.tag(tag);
  std::visit(Overloaded{
                 [&](const HelloRequest& h) {
                   w.i64("version", h.version);
                   if (!h.client.empty()) w.str("client", h.client);
                 },
                 [&](const GenerateMessage& g) { encode_generate(w, g); },
                 [&](const CancelRequest& c) { w.str("id", c.id); },
                 [&](const StatusRequest& s) { w.str("id", s.id); },
                 [&](const StatsRequest& s) { w.str("format", s.format == StatsFormat::kMap ? "map" : "prometheus"); },
                 [&](const TokenizeRequest& t) {
                   w.str("text", t.text);
                   put_optional(w, "add_bos", t.add_bos);
                   w.boolean("parse_special", t.parse_special);
                   detail::write_model_fields(w, t.model, std::nullopt);
                 },
                 [&](const DetokenizeRequest& d) {
                   w.raw("ids", detail::pack_int_array(d.ids.data(), d.ids.size()));
                   detail::write_model_fields(w, d.model, std::nullopt);
                 },
                 [&](const ModelRequest& m) { detail::write_model_fields(w, m.model, std::nullopt); },
                 [&](const ModelsRequest&) {},
                 [&](const LoadRequest& l) { detail::write_model_fields(w, l.model, l.keep_alive); },
                 [&](const UnloadRequest& u) { detail::write_model_fields(w, u.model, std::nullopt); },
                 [&](const PullRequest& p) {
                   detail::write_model_fields(w, p.model, std::nullopt);
                   w.boolean("stream", p.stream);
                 },
                 [&](const DeleteRequest& d) { detail::write_model_fields(w, d.model, std::nullopt); },
                 [&](const ReplayRequest& p) {
                   w.str("id", p.id);
                   w.i64("from_seq", p.from_seq);
                 },
                 [&](const ChatRequest& c) {
                   auto& pk = w.key("messages");
                   pk.pack_array(static_cast<uint32_t>(c.messages.size()));
                   for (const ChatTurn& turn : c.messages) {
                     pk.pack_map(2 + !turn.tool_calls.empty() + !turn.tool_call_id.empty() + !turn.name.empty() +
                                 !turn.reasoning_content.empty());
                     detail::pack_str(pk, "role");
                     detail::pack_str(pk, turn.role);
                     detail::pack_str(pk, "content");
                     detail::pack_str(pk, turn.content);
                     for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"tool_calls", &turn.tool_calls},
                                                      {"tool_call_id", &turn.tool_call_id}, {"name", &turn.name},
                                                      {"reasoning_content", &turn.reasoning_content}}) {
                       if (value->empty()) continue;
                       detail::pack_str(pk, key);
                       detail::pack_str(pk, *value);
                     }
                   }
                   w.boolean("add_generation_prompt", c.add_generation_prompt);
                   if (c.chat_template) w.str("chat_template", *c.chat_template);
                   if (!c.tools.empty()) w.str("tools", c.tools);
                   if (!c.tool_choice.empty()) w.str("tool_choice", c.tool_choice);
                   if (!c.tool_name.empty()) w.str("tool_name", c.tool_name);
                   put_optional(w, "parallel_tool_calls", c.parallel_tool_calls);
                   put_optional(w, "enable_thinking", c.enable_thinking);
                   encode_generate(w, c.generate, /*with_prompt=*/false);
                 },
                 [&](const EmbedRequest& e) { detail::encode_embed(w, e); },
             },
             body);
  return w.finish();
}

std::string encode_request(const Request& request) { return encode_request(request.body, request.tag); }

}  // namespace vks::proto
