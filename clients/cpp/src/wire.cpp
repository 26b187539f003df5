#include "clients/cpp/src/wire.h"

#include "protocol/responses.h"
#include "protocol/value_codec.h"
#include "vkstream/errors.h"

namespace vkstream::detail {
namespace {

// An answer as protocol/'s typed struct: packed again and parsed by the one wire implementation,
// so the client does not repeat the answers' fields and checks (these calls are rare).
template <class T>
T parse_typed(const Value& answer) {
  vks::proto::Result<vks::proto::ServerMessage> m = vks::proto::parse_server_message(vks::proto::pack_value(answer));
  if (!m) throw ClientError(ErrorKind::kProtocol, "vkstreamd sent a malformed answer: " + m.error().message);
  if (const T* body = std::get_if<T>(&m->body)) return *body;
  throw ClientError(ErrorKind::kProtocol, "vkstreamd answered `" + answer.get_string("type") + "` to a model request");
}

}  // namespace

ModelList to_model_list(const Value& answer) {
  const auto m = parse_typed<vks::proto::ModelsAnswer>(answer);
  ModelList out;
  out.max_loaded = m.max_loaded;
  for (const vks::proto::ServableModelEntry& e : m.models) {
    out.models.push_back({e.name, e.path, e.size_bytes, e.loaded, e.loading, e.pinned, e.is_default, e.running,
                          e.resident_bytes, e.expires_in_ms, e.device});
  }
  return out;
}

LoadResult to_load_result(const Value& answer) {
  const auto l = parse_typed<vks::proto::LoadedAnswer>(answer);
  return {l.model, l.load_ms};
}

UnloadResult to_unload_result(const Value& answer) {
  const auto u = parse_typed<vks::proto::UnloadedAnswer>(answer);
  return {u.model, u.was_loaded};
}

vks::proto::GenerateRequest to_wire(const GenerateOptions& o) {
  vks::proto::GenerateRequest g;
  g.prompt = o.prompt;
  g.prompt_ids = o.prompt_ids;
  g.add_bos = o.add_bos;
  g.max_tokens = o.max_tokens;
  g.min_tokens = o.min_tokens;
  g.temperature = o.temperature;
  g.top_k = o.top_k;
  g.top_p = o.top_p;
  g.min_p = o.min_p;
  g.repetition_penalty = o.repetition_penalty;
  g.presence_penalty = o.presence_penalty;
  g.frequency_penalty = o.frequency_penalty;
  g.penalty_last_n = o.penalty_last_n;
  g.logit_bias = o.logit_bias;
  g.seed = o.seed;
  g.stop = o.stop;
  g.stop_token_ids = o.stop_token_ids;
  g.ignore_eos = o.ignore_eos;
  g.logprobs = o.logprobs;
  g.priority = o.priority;
  g.deadline_ms = o.deadline_ms;
  g.speculative = o.speculative;
  g.id = o.id;
  g.detached = o.detached;
  g.stream = o.stream;
  g.grammar = o.grammar.value_or("");
  g.json_schema = o.json_schema.value_or("");
  g.model = o.model;
  g.keep_alive = o.keep_alive;
  return g;
}

std::string encode_generate(const GenerateOptions& options, int64_t tag) {
  if (options.messages.empty()) {
    return vks::proto::encode_request(vks::proto::RequestBody(to_wire(options)), vks::proto::Tag::of(tag));
  }
  // A chat: the generation fields without the prompt, plus the conversation.
  vks::proto::ChatRequest chat;
  chat.generate = to_wire(options);
  for (const ChatMessage& m : options.messages) chat.messages.push_back({m.role, m.content, m.tool_calls, m.tool_call_id, m.name});
  chat.add_generation_prompt = options.add_generation_prompt.value_or(true);
  chat.chat_template = options.chat_template;
  chat.tools = options.tools;
  chat.tool_choice = options.tool_choice;
  chat.tool_name = options.tool_name;
  chat.parallel_tool_calls = options.parallel_tool_calls;
  return vks::proto::encode_request(vks::proto::RequestBody(std::move(chat)), vks::proto::Tag::of(tag));
}

std::string encode_simple_request(const std::string& type, int64_t tag, const Value& fields) {
  Value msg = Value::Map{{"type", Value(type)}, {"tag", Value(tag)}};
  if (const Value::Map* m = fields.as_map()) {
    for (const auto& [k, v] : *m) msg.set(k, v);
  }
  return vks::proto::pack_value(msg);
}

std::string pack_value(const Value& v) { return vks::proto::pack_value(v); }

Value unpack_value(std::string_view bytes) {
  vks::proto::Result<Value> v = vks::proto::unpack_value(bytes);
  if (!v) throw ClientError(ErrorKind::kProtocol, v.error().message);
  return std::move(v.value());
}

}  // namespace vkstream::detail
