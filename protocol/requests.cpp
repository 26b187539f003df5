#include "protocol/requests.h"

// GCC 12 reports a false -Wmaybe-uninitialized when the Request variant is moved into a Result at
// -O3 (it appeared when GenerateRequest grew the grammar/json_schema strings).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <charconv>
#include <limits>

#include "protocol/json_text.h"
#include "protocol/msgpack_io.h"
#include "protocol/topic.h"
#include "protocol/version.h"

namespace vks::proto {
namespace {

using detail::MapReader;
constexpr int64_t kMaxTokenId = std::numeric_limits<int32_t>::max();
constexpr int32_t kDefaultMaxTokensCap = 1 << 20;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

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

bool read_logit_bias(MapReader& r, const ProtocolLimits& limits, SamplingParams& s) {
  if (!r.has("logit_bias")) return true;
  const msgpack::object* m = nullptr;
  if (!r.get_map("logit_bias", m, true)) return false;
  if (m->via.map.size > static_cast<uint32_t>(limits.max_logit_bias))
    return r.fail(WireError::kInvalidField, "logit_bias",
                  std::to_string(m->via.map.size) + " entries exceed the limit of " + std::to_string(limits.max_logit_bias));
  s.logit_bias.clear();
  for (uint32_t i = 0; i < m->via.map.size; ++i) {
    const msgpack::object_kv& kv = m->via.map.ptr[i];
    int64_t id = -1;
    std::string_view ks;
    std::string key_text;
    if (detail::as_int64(kv.key, id)) {
      key_text = std::to_string(id);
    } else if (detail::as_string(kv.key, ks)) {
      key_text = std::string(ks.substr(0, 32));
      const auto [p, ec] = std::from_chars(ks.data(), ks.data() + ks.size(), id);
      if (ec != std::errc() || p != ks.data() + ks.size()) id = -1;
    } else {
      return r.fail(WireError::kInvalidField, "logit_bias", "keys must be token ids (integers or decimal strings)");
    }
    const std::string field = "logit_bias." + key_text;
    if (id < 0 || id > kMaxTokenId) return r.fail(WireError::kInvalidField, field, "not a valid token id");
    double bias = 0;
    if (!detail::as_double(kv.val, bias)) return r.fail(WireError::kInvalidField, field, "bias must be a number");
    if (!(bias >= -100.0 && bias <= 100.0)) return r.fail(WireError::kInvalidField, field, "bias must be in [-100, 100]");
    s.logit_bias.emplace_back(static_cast<TokenId>(id), static_cast<float>(bias));
  }
  return true;
}

bool read_stop_strings(MapReader& r, const ProtocolLimits& limits, StopParams& stop) {
  const msgpack::object* o = r.find("stop");
  if (!o) return true;
  stop.stop_strings.clear();
  auto add = [&](const msgpack::object& item, const std::string& field) {
    std::string_view s;
    if (!detail::as_string(item, s)) return r.fail(WireError::kInvalidField, field, "expected string, got " + std::string(detail::type_name(item)));
    if (s.empty()) return r.fail(WireError::kInvalidField, field, "stop strings must not be empty");
    if (s.size() > static_cast<size_t>(limits.max_stop_string_bytes))
      return r.fail(WireError::kInvalidField, field, "stop string of " + std::to_string(s.size()) +
                                                          " bytes exceeds " + std::to_string(limits.max_stop_string_bytes));
    stop.stop_strings.emplace_back(s);
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

// with_prompt = false: the generation fields of a chat request (no prompt, no add_bos).
Result<GenerateMessage> parse_generate(MapReader& r, const ProtocolLimits& limits,
                                       std::chrono::steady_clock::time_point now, bool with_prompt = true) {
  GenerateMessage g;
  GenerateRequest& q = g.request;
  auto fail = [&]() -> Result<GenerateMessage> { return r.take_error(); };

  const bool has_text = r.has("prompt");
  const bool has_ids = r.has("prompt_ids");
  if (!with_prompt) {
    if (has_text || has_ids) {
      r.fail(WireError::kInvalidField, has_text ? "prompt" : "prompt_ids", "a chat request takes messages, not a prompt");
      return fail();
    }
  } else if (has_text && has_ids) {
    r.fail(WireError::kInvalidField, "prompt_ids", "give either prompt or prompt_ids, not both");
    return fail();
  }
  if (with_prompt && !has_text && !has_ids) {
    r.fail(WireError::kMissingField, "prompt", "one of prompt (string) or prompt_ids (array of token ids) is required");
    return fail();
  }
  if (!with_prompt) {
    q.add_bos = false;  // the chat template decides (the server adds BOS only when it did not)
  } else if (has_text) {
    if (!r.get_string("prompt", q.prompt_text, true, limits.max_frame_bytes)) return fail();
  } else {
    const msgpack::object* arr = nullptr;
    if (!r.get_array("prompt_ids", arr, true, std::numeric_limits<uint32_t>::max())) return fail();
    if (arr->via.array.size == 0) {
      r.fail(WireError::kInvalidField, "prompt_ids", "must not be empty");
      return fail();
    }
    if (limits.max_prompt_tokens > 0 && arr->via.array.size > static_cast<uint32_t>(limits.max_prompt_tokens)) {
      r.fail(WireError::kPromptTooLong, "prompt_ids",
             std::to_string(arr->via.array.size) + " prompt tokens exceed max_prompt_tokens " +
                 std::to_string(limits.max_prompt_tokens));
      return fail();
    }
    if (!read_token_ids(r, "prompt_ids", *arr, q.prompt_ids)) return fail();
  }
  if (with_prompt && !r.get_bool("add_bos", q.add_bos, false)) return fail();

  const int32_t max_tokens_cap = limits.max_tokens > 0 ? limits.max_tokens : kDefaultMaxTokensCap;
  if (!r.get_i32("max_tokens", q.stop.max_tokens, false, 1, max_tokens_cap)) return fail();
  if (!r.get_i32("min_tokens", q.stop.min_tokens, false, 0, max_tokens_cap)) return fail();
  // max_tokens 0 = unset: generate until the context is full (Engine::submit checks min_tokens
  // against the room left once it knows the prompt's length).
  if (q.stop.max_tokens > 0 && q.stop.min_tokens > q.stop.max_tokens) {
    r.fail(WireError::kInvalidField, "min_tokens", "must not exceed max_tokens (" + std::to_string(q.stop.max_tokens) + ")");
    return fail();
  }

  SamplingParams& s = q.sampling;
  if (!r.get_float("temperature", s.temperature, false, 0.0f, 100.0f)) return fail();
  if (!r.get_i32("top_k", s.top_k, false, 0, 1 << 20)) return fail();
  if (!r.get_float("top_p", s.top_p, false, 0.0f, 1.0f)) return fail();
  if (!(s.top_p > 0.0f)) {
    r.fail(WireError::kInvalidField, "top_p", "must be in (0, 1]; 1 disables it");
    return fail();
  }
  if (!r.get_float("min_p", s.min_p, false, 0.0f, 1.0f)) return fail();
  if (!r.get_float("repetition_penalty", s.repetition_penalty, false, 0.0f, 100.0f)) return fail();
  if (!(s.repetition_penalty > 0.0f)) {
    r.fail(WireError::kInvalidField, "repetition_penalty", "must be in (0, 100]; 1 disables it");
    return fail();
  }
  if (!r.get_float("presence_penalty", s.presence_penalty, false, -100.0f, 100.0f)) return fail();
  if (!r.get_float("frequency_penalty", s.frequency_penalty, false, -100.0f, 100.0f)) return fail();
  if (!r.get_i32("penalty_last_n", s.penalty_last_n, false, -1, 1 << 20)) return fail();
  if (!read_logit_bias(r, limits, s)) return fail();
  if (r.has("seed")) {
    uint64_t seed = 0;
    if (!r.get_u64("seed", seed, true)) return fail();
    s.seed = seed;
  }

  if (!read_stop_strings(r, limits, q.stop)) return fail();
  const msgpack::object* stop_ids = nullptr;
  if (!r.get_array("stop_token_ids", stop_ids, false, static_cast<size_t>(limits.max_stop_token_ids))) return fail();
  if (stop_ids && !read_token_ids(r, "stop_token_ids", *stop_ids, q.stop.stop_token_ids)) return fail();
  if (!r.get_bool("ignore_eos", q.stop.ignore_eos, false)) return fail();

  q.logprobs = -1;
  if (!r.get_i32("logprobs", q.logprobs, false, 0, limits.max_logprobs)) return fail();
  if (!r.get_i32("priority", q.priority, false, -1000, 1000)) return fail();
  if (r.has("deadline_ms")) {
    int64_t ms = 0;
    if (!r.get_int("deadline_ms", ms, true, 1, limits.max_deadline_ms)) return fail();
    g.deadline_ms = ms;
    q.deadline = now + std::chrono::milliseconds(ms);
  }
  if (r.has("id")) {
    if (!r.get_string("id", q.id, true, 1024)) return fail();
    if (!is_valid_client_id(q.id)) {
      r.fail(WireError::kInvalidField, "id", "client-chosen ids are 1..64 chars of [A-Za-z0-9._-]");
      return fail();
    }
  }
  if (!r.get_bool("detached", g.detached, false)) return fail();
  if (!r.get_bool("stream", g.stream, false)) return fail();
  // Constrained output: compiled (and a bad one rejected with its position) by the engine's submit.
  if (!r.get_string("grammar", q.grammar, false, limits.max_frame_bytes)) return fail();
  if (const msgpack::object* schema = r.find("json_schema")) {
    if (schema->type == msgpack::type::STR) {
      if (!r.get_string("json_schema", q.json_schema, true, limits.max_frame_bytes)) return fail();
    } else if (schema->type == msgpack::type::MAP || schema->type == msgpack::type::BOOLEAN) {
      std::string why;
      if (!msgpack_to_json_text(*schema, q.json_schema, why)) {
        r.fail(WireError::kInvalidField, "json_schema", why);
        return fail();
      }
    } else {
      r.fail_type("json_schema", "map (the schema) or string (its JSON text)");
      return fail();
    }
  }
  return g;
}

Result<ChatRequest> parse_chat(MapReader& r, const ProtocolLimits& limits, std::chrono::steady_clock::time_point now) {
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
    if (!m.get_string("role", turn.role, true, 64, false) || !m.get_string("content", turn.content, true, limits.max_frame_bytes)) {
      return r.fail_from(m), fail();
    }
    c.messages.push_back(std::move(turn));
  }
  if (!r.get_bool("add_generation_prompt", c.add_generation_prompt, false)) return fail();
  if (r.has("chat_template")) {
    std::string source;
    if (!r.get_string("chat_template", source, true, kMaxChatTemplateBytes, false)) return fail();
    c.chat_template = std::move(source);
  }
  Result<GenerateMessage> g = parse_generate(r, limits, now, /*with_prompt=*/false);
  if (!g) return g.error();
  c.generate = std::move(g.value());
  return c;
}

Result<RequestBody> parse_body(std::string_view type, MapReader& r, const ProtocolLimits& limits,
                               std::chrono::steady_clock::time_point now) {
  auto fail = [&]() -> Result<RequestBody> { return r.take_error(); };
  if (type == "chat") {
    Result<ChatRequest> c = parse_chat(r, limits, now);
    if (!c) return c.error();
    return RequestBody(std::move(c.value()));
  }
  if (type == "generate") {
    Result<GenerateMessage> g = parse_generate(r, limits, now);
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
    if (!r.get_bool("add_bos", t.add_bos, false)) return fail();
    if (!r.get_bool("parse_special", t.parse_special, false)) return fail();
    return RequestBody(std::move(t));
  }
  if (type == "detokenize") {
    DetokenizeRequest d;
    const msgpack::object* arr = nullptr;
    if (!r.get_array("ids", arr, true, static_cast<size_t>(limits.max_detokenize_ids))) return fail();
    if (!read_token_ids(r, "ids", *arr, d.ids)) return fail();
    return RequestBody(std::move(d));
  }
  if (type == "model") return RequestBody(ModelRequest{});
  if (type == "replay") {
    ReplayRequest p;
    if (!read_request_id(r, p.id)) return fail();
    if (!r.get_int("from_seq", p.from_seq, false, 0, std::numeric_limits<int64_t>::max() / 2)) return fail();
    return RequestBody(std::move(p));
  }
  std::string shown(type.substr(0, 64));
  return make_error(WireError::kUnknownType, "unknown request type \"" + shown + "\"", "type");
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
                    },
                    body);
}

Result<Request> parse_request(std::string_view payload, const ProtocolLimits& limits,
                              std::chrono::steady_clock::time_point now) {
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
    Result<RequestBody> body = parse_body(type, r, limits, now);
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

void encode_generate(detail::MapWriter& w, const GenerateMessage& g, bool with_prompt = true) {
  const GenerateRequest& q = g.request;
  if (!with_prompt) {
    // chat: messages instead of a prompt (encoded by the caller)
  } else if (!q.prompt_ids.empty()) {
    w.raw("prompt_ids", detail::pack_int_array(q.prompt_ids.data(), q.prompt_ids.size()));
  } else {
    w.str("prompt", q.prompt_text);
  }
  if (with_prompt) w.boolean("add_bos", q.add_bos);
  if (q.stop.max_tokens > 0) w.i64("max_tokens", q.stop.max_tokens);  // 0 = unset: until the context is full
  w.i64("min_tokens", q.stop.min_tokens);
  const SamplingParams& s = q.sampling;
  w.f64("temperature", s.temperature);
  w.i64("top_k", s.top_k);
  w.f64("top_p", s.top_p);
  w.f64("min_p", s.min_p);
  w.f64("repetition_penalty", s.repetition_penalty);
  w.f64("presence_penalty", s.presence_penalty);
  w.f64("frequency_penalty", s.frequency_penalty);
  w.i64("penalty_last_n", s.penalty_last_n);
  if (!s.logit_bias.empty()) {
    auto& pk = w.key("logit_bias");
    pk.pack_map(static_cast<uint32_t>(s.logit_bias.size()));
    for (const auto& [id, bias] : s.logit_bias) {
      pk.pack_int32(id);
      detail::pack_f64(w.body(), bias);
    }
  }
  if (s.seed) w.u64("seed", *s.seed);
  if (!q.stop.stop_strings.empty()) {
    auto& pk = w.key("stop");
    pk.pack_array(static_cast<uint32_t>(q.stop.stop_strings.size()));
    for (const std::string& str : q.stop.stop_strings) detail::pack_str(pk, str);
  }
  if (!q.stop.stop_token_ids.empty())
    w.raw("stop_token_ids", detail::pack_int_array(q.stop.stop_token_ids.data(), q.stop.stop_token_ids.size()));
  w.boolean("ignore_eos", q.stop.ignore_eos);
  if (q.logprobs >= 0) w.i64("logprobs", q.logprobs);
  w.i64("priority", q.priority);
  if (g.deadline_ms) w.i64("deadline_ms", *g.deadline_ms);
  if (!q.id.empty()) w.str("id", q.id);
  w.boolean("detached", g.detached);
  w.boolean("stream", g.stream);
  if (!q.grammar.empty()) w.str("grammar", q.grammar);
  if (!q.json_schema.empty()) w.str("json_schema", q.json_schema);
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
                   w.boolean("add_bos", t.add_bos);
                   w.boolean("parse_special", t.parse_special);
                 },
                 [&](const DetokenizeRequest& d) { w.raw("ids", detail::pack_int_array(d.ids.data(), d.ids.size())); },
                 [&](const ModelRequest&) {},
                 [&](const ReplayRequest& p) {
                   w.str("id", p.id);
                   w.i64("from_seq", p.from_seq);
                 },
                 [&](const ChatRequest& c) {
                   auto& pk = w.key("messages");
                   pk.pack_array(static_cast<uint32_t>(c.messages.size()));
                   for (const ChatTurn& turn : c.messages) {
                     pk.pack_map(2);
                     detail::pack_str(pk, "role");
                     detail::pack_str(pk, turn.role);
                     detail::pack_str(pk, "content");
                     detail::pack_str(pk, turn.content);
                   }
                   w.boolean("add_generation_prompt", c.add_generation_prompt);
                   if (c.chat_template) w.str("chat_template", *c.chat_template);
                   encode_generate(w, c.generate, /*with_prompt=*/false);
                 },
             },
             body);
  return w.finish();
}

std::string encode_request(const Request& request) { return encode_request(request.body, request.tag); }

}  // namespace vks::proto
