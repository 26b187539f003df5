#include "clients/cpp/src/request_encoding.h"

#include <msgpack.hpp>

#include "clients/cpp/src/msgpack_value.h"

namespace vkstream::detail {

std::string encode_simple_request(const std::string& type, int64_t tag, const Value& fields) {
  Value msg = Value::Map{{"type", Value(type)}, {"tag", Value(tag)}};
  if (const Value::Map* m = fields.as_map()) {
    for (const auto& [k, v] : *m) msg.set(k, v);
  }
  return pack_value(msg);
}

namespace {

// Counts and writes map entries in two passes so the map header has the exact size.
class MapWriter {
 public:
  explicit MapWriter(msgpack::packer<msgpack::sbuffer>* pk) : pk_(pk) {}
  size_t count() const { return count_; }
  template <class T>
  void field(const char* key, const T& value) {
    ++count_;
    if (pk_ == nullptr) return;
    pk_->pack(std::string_view(key));
    pk_->pack(value);
  }
  template <class T>
  void optional(const char* key, const std::optional<T>& value) {
    if (value) field(key, *value);
  }
  msgpack::packer<msgpack::sbuffer>* packer() { return pk_; }
  void count_one() { ++count_; }

 private:
  msgpack::packer<msgpack::sbuffer>* pk_;
  size_t count_ = 0;
};

void write_generate(MapWriter& w, const GenerateOptions& o, int64_t tag) {
  w.field("type", std::string_view("generate"));
  w.field("tag", tag);
  if (!o.prompt_ids.empty()) w.field("prompt_ids", o.prompt_ids);
  else w.field("prompt", o.prompt);
  w.optional("add_bos", o.add_bos);
  w.optional("max_tokens", o.max_tokens);
  w.optional("temperature", o.temperature);
  w.optional("top_k", o.top_k);
  w.optional("top_p", o.top_p);
  w.optional("min_p", o.min_p);
  w.optional("repetition_penalty", o.repetition_penalty);
  w.optional("presence_penalty", o.presence_penalty);
  w.optional("frequency_penalty", o.frequency_penalty);
  w.optional("penalty_last_n", o.penalty_last_n);
  if (!o.logit_bias.empty()) {
    // A map from token id (integer key) to bias.
    w.count_one();
    if (auto* pk = w.packer()) {
      pk->pack(std::string_view("logit_bias"));
      pk->pack_map(static_cast<uint32_t>(o.logit_bias.size()));
      for (const auto& [id, bias] : o.logit_bias) {
        pk->pack(id);
        pk->pack(bias);
      }
    }
  }
  w.optional("seed", o.seed);
  if (!o.stop.empty()) w.field("stop", o.stop);
  if (!o.stop_token_ids.empty()) w.field("stop_token_ids", o.stop_token_ids);
  w.optional("ignore_eos", o.ignore_eos);
  w.optional("min_tokens", o.min_tokens);
  w.optional("logprobs", o.logprobs);
  w.optional("priority", o.priority);
  w.optional("deadline_ms", o.deadline_ms);
  if (!o.id.empty()) w.field("id", o.id);
  w.optional("detached", o.detached);
  w.optional("stream", o.stream);
  w.optional("grammar", o.grammar);
  w.optional("json_schema", o.json_schema);
}

}  // namespace

std::string encode_generate(const GenerateOptions& options, int64_t tag) {
  MapWriter counter(nullptr);
  write_generate(counter, options, tag);
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(static_cast<uint32_t>(counter.count()));
  MapWriter writer(&pk);
  write_generate(writer, options, tag);
  return std::string(buf.data(), buf.size());
}

}  // namespace vkstream::detail
