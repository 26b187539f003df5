#include "clients/cpp/src/wire.h"

#include "protocol/value_codec.h"
#include "vkstream/errors.h"

namespace vkstream::detail {

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
  g.id = o.id;
  g.detached = o.detached;
  g.stream = o.stream;
  g.grammar = o.grammar.value_or("");
  g.json_schema = o.json_schema.value_or("");
  return g;
}

std::string encode_generate(const GenerateOptions& options, int64_t tag) {
  if (options.messages.empty()) {
    return vks::proto::encode_request(vks::proto::RequestBody(to_wire(options)), vks::proto::Tag::of(tag));
  }
  // A chat: the generation fields without the prompt, plus the conversation.
  vks::proto::ChatRequest chat;
  chat.generate = to_wire(options);
  for (const ChatMessage& m : options.messages) chat.messages.push_back({m.role, m.content});
  chat.add_generation_prompt = options.add_generation_prompt.value_or(true);
  chat.chat_template = options.chat_template;
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
