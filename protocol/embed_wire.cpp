#include "protocol/embed_wire.h"

#include "protocol/model_fields.h"

#include <cstring>
#include <limits>

#include "protocol/param_ranges.h"
#include "protocol/topic.h"

namespace vks::proto::detail {
namespace {

constexpr int64_t kMaxTokenId = std::numeric_limits<int32_t>::max();

// msgpack float32 (0xca), never turned into an integer.
void pack_f32(std::string& out, float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  char buf[5];
  buf[0] = static_cast<char>(0xca);
  for (int k = 0; k < 4; ++k) buf[1 + k] = static_cast<char>(bits >> (24 - 8 * k));
  out.append(buf, 5);
}

bool read_inputs(MapReader& r, const ProtocolLimits& limits, EmbedRequest& e) {
  const msgpack::object* o = r.find("input");
  if (o->type == msgpack::type::STR) {  // one text
    std::string text;
    if (!r.get_string("input", text, true, limits.max_frame_bytes)) return false;
    e.input.push_back(std::move(text));
    return true;
  }
  const msgpack::object* arr = nullptr;
  if (!r.get_array("input", arr, true, kMaxEmbedInputs)) return false;
  if (arr->via.array.size == 0) return r.fail(WireError::kInvalidField, "input", "must hold at least one text");
  for (uint32_t i = 0; i < arr->via.array.size; ++i) {
    std::string_view s;
    const std::string field = "input." + std::to_string(i);
    if (!as_string(arr->via.array.ptr[i], s)) return r.fail_type(field, "string");
    e.input.emplace_back(s);
  }
  return true;
}

bool read_tokens(MapReader& r, const ProtocolLimits& limits, EmbedRequest& e) {
  const msgpack::object* arr = nullptr;
  if (!r.get_array("tokens", arr, true, kMaxEmbedInputs)) return false;
  if (arr->via.array.size == 0) return r.fail(WireError::kInvalidField, "tokens", "must hold at least one array of token ids");
  for (uint32_t i = 0; i < arr->via.array.size; ++i) {
    const msgpack::object& item = arr->via.array.ptr[i];
    const std::string field = "tokens." + std::to_string(i);
    if (item.type != msgpack::type::ARRAY) return r.fail_type(field, "array of token ids");
    if (item.via.array.size == 0) return r.fail(WireError::kInvalidField, field, "must not be empty");
    if (limits.max_prompt_tokens > 0 && item.via.array.size > static_cast<uint32_t>(limits.max_prompt_tokens)) {
      return r.fail(WireError::kPromptTooLong, field,
                    std::to_string(item.via.array.size) + " tokens exceed max_prompt_tokens " +
                        std::to_string(limits.max_prompt_tokens));
    }
    std::vector<TokenId>& ids = e.tokens.emplace_back();
    ids.reserve(item.via.array.size);
    for (uint32_t k = 0; k < item.via.array.size; ++k) {
      int64_t v = 0;
      const std::string sub = field + "." + std::to_string(k);
      if (!as_int64(item.via.array.ptr[k], v)) return r.fail_type(sub, "integer token id");
      if (v < 0 || v > kMaxTokenId) return r.fail(WireError::kInvalidField, sub, "token id " + std::to_string(v) + " out of range");
      ids.push_back(static_cast<TokenId>(v));
    }
  }
  return true;
}

}  // namespace

Result<EmbedRequest> parse_embed(MapReader& r, const ProtocolLimits& limits) {
  auto fail = [&]() -> Result<EmbedRequest> { return r.take_error(); };
  EmbedRequest e;
  const bool has_input = r.has("input");
  const bool has_tokens = r.has("tokens");
  if (has_input && has_tokens) {
    r.fail(WireError::kInvalidField, "tokens", "give either input or tokens, not both");
    return fail();
  }
  if (!has_input && !has_tokens) {
    r.fail(WireError::kMissingField, "input", "one of input (string or array of strings) or tokens (array of arrays of token ids) is required");
    return fail();
  }
  if (has_input ? !read_inputs(r, limits, e) : !read_tokens(r, limits, e)) return fail();
  for (const char* key : {"add_bos", "normalize"}) {
    if (!r.has(key)) continue;
    bool v = false;
    if (!r.get_bool(key, v, true)) return fail();
    (std::string_view(key) == "add_bos" ? e.add_bos : e.normalize) = v;
  }
  if (r.has("pooling")) {
    std::string pooling;
    if (!r.get_string("pooling", pooling, true, 16)) return fail();
    if (pooling != "mean" && pooling != "cls" && pooling != "last") {
      r.fail(WireError::kInvalidField, "pooling", "must be \"mean\", \"cls\" or \"last\"");
      return fail();
    }
    e.pooling = std::move(pooling);
  }
  if (r.has(param::kPriority.name)) {
    int32_t v = 0;
    if (!r.get_i32(param::kPriority.name, v, true, static_cast<int32_t>(param::kPriority.min),
                   static_cast<int32_t>(param::kPriority.max)))
      return fail();
    e.priority = v;
  }
  if (r.has("deadline_ms")) {
    int64_t ms = 0;
    if (!r.get_int("deadline_ms", ms, true, 1, limits.max_deadline_ms)) return fail();
    e.deadline_ms = ms;
  }
  if (r.has("id")) {
    if (!r.get_string("id", e.id, true, 1024)) return fail();
    if (!is_valid_client_id(e.id)) {
      r.fail(WireError::kInvalidField, "id", "client-chosen ids are 1..64 chars of [A-Za-z0-9._-]");
      return fail();
    }
  }
  if (!read_model_name(r, e.model)) return fail();
  if (!read_keep_alive(r, e.keep_alive)) return fail();
  return e;
}

void encode_embed(MapWriter& w, const EmbedRequest& e) {
  if (!e.tokens.empty()) {
    auto& pk = w.key("tokens");
    pk.pack_array(static_cast<uint32_t>(e.tokens.size()));
    for (const auto& ids : e.tokens) w.body().append(pack_int_array(ids.data(), ids.size()));
  } else {
    auto& pk = w.key("input");
    pk.pack_array(static_cast<uint32_t>(e.input.size()));
    for (const std::string& s : e.input) pack_str(pk, s);
  }
  if (e.add_bos) w.boolean("add_bos", *e.add_bos);
  if (e.normalize) w.boolean("normalize", *e.normalize);
  if (e.pooling) w.str("pooling", *e.pooling);
  if (e.priority) w.i64("priority", *e.priority);
  if (e.deadline_ms) w.i64("deadline_ms", *e.deadline_ms);
  if (!e.id.empty()) w.str("id", e.id);
  write_model_fields(w, e.model, e.keep_alive);
}

void encode_embed_answer(MapWriter& w, const EmbedAnswer& a) {
  w.str("id", a.id);
  auto& pk = w.key("embeddings");
  pk.pack_array(static_cast<uint32_t>(a.embeddings.size()));
  for (const std::vector<float>& v : a.embeddings) {
    pk.pack_array(static_cast<uint32_t>(v.size()));
    for (const float x : v) pack_f32(w.body(), x);
  }
  MapWriter usage;
  usage.i64("prompt_tokens", a.usage.prompt_tokens);
  w.raw("usage", usage.finish());
}

bool parse_embed_answer(MapReader& r, EmbedAnswer& a) {
  if (!r.get_string("id", a.id, false, 1024)) return false;
  const msgpack::object* arr = nullptr;
  if (!r.get_array("embeddings", arr, true, std::numeric_limits<uint32_t>::max())) return false;
  a.embeddings.clear();
  a.embeddings.reserve(arr->via.array.size);
  for (uint32_t i = 0; i < arr->via.array.size; ++i) {
    const msgpack::object& item = arr->via.array.ptr[i];
    const std::string field = "embeddings." + std::to_string(i);
    if (item.type != msgpack::type::ARRAY) return r.fail_type(field, "array of numbers");
    std::vector<float>& v = a.embeddings.emplace_back();
    v.reserve(item.via.array.size);
    for (uint32_t k = 0; k < item.via.array.size; ++k) {
      double x = 0;
      if (!as_double(item.via.array.ptr[k], x)) return r.fail_type(field + "." + std::to_string(k), "number");
      v.push_back(static_cast<float>(x));
    }
  }
  const msgpack::object* usage = nullptr;
  if (!r.get_map("usage", usage, false)) return false;
  if (usage) {
    MapReader u(*usage, "usage");
    if (!u.get_i32("prompt_tokens", a.usage.prompt_tokens, false, 0, std::numeric_limits<int32_t>::max())) {
      return r.fail_from(u);
    }
  }
  return true;
}

}  // namespace vks::proto::detail
