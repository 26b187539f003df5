// Client side: server messages → typed structs. Lenient about optional fields (newer servers may
// omit or add some), strict about types of the fields present.
#include <limits>

#include "protocol/model_fields.h"
#include "protocol/embed_wire.h"
#include "protocol/msgpack_io.h"
#include "protocol/responses.h"
#include "protocol/wire_fields.h"

namespace vks::proto {
namespace {

using detail::MapReader;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr double kDMax = std::numeric_limits<double>::max();

bool read_ids(MapReader& r, std::string_view key, std::vector<TokenId>& out, bool required) {
  const msgpack::object* arr = nullptr;
  if (!r.get_array(key, arr, required, std::numeric_limits<uint32_t>::max())) return false;
  out.clear();
  if (!arr) return true;
  out.reserve(arr->via.array.size);
  for (uint32_t i = 0; i < arr->via.array.size; ++i) {
    int64_t v = 0;
    if (!detail::as_int64(arr->via.array.ptr[i], v) || v < kI32Min || v > kI32Max)
      return r.fail_type(std::string(key) + "." + std::to_string(i), "integer token id");
    out.push_back(static_cast<TokenId>(v));
  }
  return true;
}

bool read_logprob_entry(const msgpack::object& o, TokenLogprob& out, MapReader& outer, const std::string& field) {
  if (o.type != msgpack::type::MAP) return outer.fail_type(field, "map");
  MapReader r(o, outer.field_name(field));
  int32_t id = 0;
  if (!r.get_i32("id", id, true, kI32Min, kI32Max)) return outer.fail_from(r);
  // Not range-checked: -inf is a legitimate log-probability of a masked token.
  const msgpack::object* lp_obj = r.find("logprob");
  double lp = 0;
  if (!lp_obj) return outer.fail_missing(field + ".logprob");
  if (!detail::as_double(*lp_obj, lp)) return outer.fail_type(field + ".logprob", "number");
  out.id = id;
  out.logprob = static_cast<float>(lp);
  return true;
}

bool read_histogram(MapReader& outer, std::string_view key, Histogram& h) {
  const msgpack::object* m = nullptr;
  if (!outer.get_map(key, m, false)) return false;
  if (!m) return true;
  MapReader r(*m, outer.field_name(key));
  auto fail = [&] {
    outer.fail_from(r);
    return false;
  };
  uint64_t count = 0;
  if (!r.get_u64("count", count, false)) return fail();
  h.count = count;
  if (!r.get_double("sum", h.sum, false, -kDMax, kDMax) || !r.get_double("p50", h.p50, false, -kDMax, kDMax) ||
      !r.get_double("p90", h.p90, false, -kDMax, kDMax) || !r.get_double("p99", h.p99, false, -kDMax, kDMax))
    return fail();
  const msgpack::object* bounds = nullptr;
  const msgpack::object* cum = nullptr;
  if (!r.get_array("bounds", bounds, false, 1024) || !r.get_array("cumulative", cum, false, 1024)) return fail();
  h.bounds.clear();
  h.cumulative.clear();
  if (bounds) {
    for (uint32_t i = 0; i < bounds->via.array.size; ++i) {
      double b = 0;
      if (!detail::as_double(bounds->via.array.ptr[i], b)) {
        r.fail_type("bounds", "array of numbers");
        return fail();
      }
      h.bounds.push_back(b);
    }
  }
  if (cum) {
    for (uint32_t i = 0; i < cum->via.array.size; ++i) {
      const msgpack::object& c = cum->via.array.ptr[i];
      if (c.type != msgpack::type::POSITIVE_INTEGER) {
        r.fail_type("cumulative", "array of non-negative integers");
        return fail();
      }
      h.cumulative.push_back(c.via.u64);
    }
  }
  if (h.bounds.size() != h.cumulative.size()) {
    r.fail(WireError::kInvalidField, "cumulative", "must have as many entries as bounds");
    return fail();
  }
  return true;
}

// One entry of a `models` answer; `field` ("models.N") names it in errors.
bool read_servable_model(const msgpack::object& o, const std::string& field, ServableModelEntry& e, MapReader& outer) {
  if (o.type != msgpack::type::MAP) return outer.fail_type(field, "map");
  MapReader r(o, outer.field_name(field));
  const bool ok = r.get_string("name", e.name, true, SIZE_MAX) && r.get_string("path", e.path, false, SIZE_MAX) &&
                  r.get_u64("size_bytes", e.size_bytes, false) && r.get_bool("loaded", e.loaded, false) &&
                  r.get_bool("loading", e.loading, false) && r.get_bool("pinned", e.pinned, false) &&
                  r.get_bool("default", e.is_default, false) && r.get_i32("running", e.running, false, 0, kI32Max) &&
                  r.get_u64("resident_bytes", e.resident_bytes, false) &&
                  r.get_int("expires_in_ms", e.expires_in_ms, false, -1, kI64Max) &&
                  r.get_string("device", e.device, false, SIZE_MAX);
  if (!ok) outer.fail_from(r);
  return ok;
}

bool read_kv_pools(MapReader& outer, std::vector<KvPoolSnapshot>& pools) {
  const msgpack::object* list = nullptr;
  if (!outer.get_array("kv_pools", list, false, 16)) return false;
  pools.clear();
  if (!list) return true;
  for (uint32_t i = 0; i < list->via.array.size; ++i) {
    const msgpack::object& o = list->via.array.ptr[i];
    const std::string field = "kv_pools." + std::to_string(i);
    if (o.type != msgpack::type::MAP) return outer.fail_type(field, "map");
    MapReader r(o, outer.field_name(field));
    KvPoolSnapshot p;
    const bool ok = r.get_string("kind", p.kind, true, 64) && r.get_i32("layers", p.layers, false, 0, kI32Max) &&
                    r.get_i32("window", p.window, false, 0, kI32Max) &&
                    r.get_i32("blocks_total", p.blocks_total, false, 0, kI32Max) &&
                    r.get_i32("blocks_used", p.blocks_used, false, 0, kI32Max) &&
                    r.get_i32("blocks_cached", p.blocks_cached, false, 0, kI32Max) &&
                    r.get_int("bytes_total", p.bytes_total, false, 0, kI64Max) &&
                    r.get_int("bytes_used", p.bytes_used, false, 0, kI64Max);
    if (!ok) return outer.fail_from(r);
    pools.push_back(std::move(p));
  }
  return true;
}

}  // namespace

namespace detail {

bool read_event(const msgpack::object& map, StreamEventType type, StreamEvent& ev, MapReader& r) {
  ev.type = type;
  const bool numbered = type != StreamEventType::kProgress;
  if (!numbered) ev.seq = -1;
  if (!r.get_string("id", ev.id, true, 1024) || !r.get_int("seq", ev.seq, numbered, 0, kI64Max)) return false;
  switch (type) {
    case StreamEventType::kQueued:
      return r.get_i32("queue_position", ev.queue_position, false, -1, kI32Max) &&
             r.get_string("model", ev.model, false, detail::kMaxModelNameBytes);
    case StreamEventType::kScheduled:
    case StreamEventType::kPreempted: return true;
    case StreamEventType::kToken: {
      if (!read_ids(r, "ids", ev.ids, true) || !r.get_string("text", ev.text, false, SIZE_MAX) ||
          !r.get_bool("first", ev.first, false))
        return false;
      const msgpack::object* lps = nullptr;
      if (!r.get_array("logprobs", lps, false, std::numeric_limits<uint32_t>::max())) return false;
      ev.logprobs.clear();
      if (!lps) return true;
      for (uint32_t i = 0; i < lps->via.array.size; ++i) {
        const msgpack::object& o = lps->via.array.ptr[i];
        const std::string field = "logprobs." + std::to_string(i);
        GeneratedToken g;
        TokenLogprob chosen;
        if (!read_logprob_entry(o, chosen, r, field)) return false;
        g.id = chosen.id;
        g.logprob = chosen.logprob;
        MapReader inner(o, r.field_name(field));
        const msgpack::object* top = nullptr;
        if (!inner.get_array("top", top, false, std::numeric_limits<uint32_t>::max())) {
          r.fail_from(inner);
          return false;
        }
        if (top) {
          for (uint32_t j = 0; j < top->via.array.size; ++j) {
            TokenLogprob alt;
            if (!read_logprob_entry(top->via.array.ptr[j], alt, r, field + ".top." + std::to_string(j))) return false;
            g.top.push_back(alt);
          }
        }
        ev.logprobs.push_back(std::move(g));
      }
      return true;
    }
    case StreamEventType::kToolCall:
      return r.get_i32("index", ev.call_index, true, 0, kI32Max) && r.get_string("call_id", ev.call_id, true, 1024) &&
             r.get_string("name", ev.call_name, true, SIZE_MAX) && r.get_string("arguments", ev.call_arguments, true, SIZE_MAX);
    case StreamEventType::kProgress:
      return r.get_i32("prompt_tokens", ev.usage.prompt_tokens, true, 0, kI32Max) &&
             r.get_i32("prompt_tokens_done", ev.prompt_tokens_done, true, 0, kI32Max) &&
             r.get_i32("cached_tokens", ev.usage.cached_tokens, false, 0, kI32Max);
    case StreamEventType::kError: {
      std::string code;
      if (!r.get_string("code", code, true, 256) || !r.get_string("message", ev.error_message, false, SIZE_MAX))
        return false;
      ev.error_code = parse_wire_error(code).value_or(WireError::kInternal);
      return true;
    }
    case StreamEventType::kFinished: {
      std::string reason;
      if (!r.get_string("reason", reason, true, 64)) return false;
      const auto parsed = parse_finish_reason(reason);
      if (!parsed) return r.fail(WireError::kInvalidField, "reason", "unknown finish reason \"" + reason + "\"");
      ev.reason = *parsed;
      const msgpack::object* usage = nullptr;
      const msgpack::object* timings = nullptr;
      if (!r.get_map("usage", usage, false) || !r.get_map("timings", timings, false)) return false;
      if (!r.get_string("model", ev.model, false, detail::kMaxModelNameBytes)) return false;
      if (usage) {
        MapReader u(*usage, "usage");
        if (!u.get_i32("prompt_tokens", ev.usage.prompt_tokens, false, 0, kI32Max) ||
            !u.get_i32("cached_tokens", ev.usage.cached_tokens, false, 0, kI32Max) ||
            !u.get_i32("generated_tokens", ev.usage.generated_tokens, false, 0, kI32Max)) {
          r.fail_from(u);
          return false;
        }
      }
      if (timings) {
        MapReader t(*timings, "timings");
        if (!t.get_double("queue_ms", ev.timings.queue_ms, false, -kDMax, kDMax) ||
            !t.get_double("ttft_ms", ev.timings.ttft_ms, false, -kDMax, kDMax) ||
            !t.get_double("total_ms", ev.timings.total_ms, false, -kDMax, kDMax) ||
            !t.get_i32("draft_tokens", ev.timings.draft_tokens, false, 0, kI32Max) ||
            !t.get_i32("accepted_tokens", ev.timings.accepted_tokens, false, 0, kI32Max) ||
            !t.get_double("load_ms", ev.timings.load_ms, false, 0, kDMax)) {
          r.fail_from(t);
          return false;
        }
      }
      return true;
    }
  }
  (void)map;
  return true;
}

bool read_model(const msgpack::object& map, ModelInfo& m, MapReader& outer) {
  MapReader r(map, "model");
  const bool ok = r.get_string("name", m.name, false, SIZE_MAX) &&
                  r.get_string("architecture", m.architecture, false, SIZE_MAX) &&
                  r.get_i32("vocab_size", m.vocab_size, false, 0, kI32Max) &&
                  r.get_i32("context_length", m.context_length, false, 0, kI32Max) &&
                  r.get_i32("dim", m.dim, false, 0, kI32Max) && r.get_i32("n_layers", m.n_layers, false, 0, kI32Max) &&
                  r.get_i32("n_heads", m.n_heads, false, 0, kI32Max) &&
                  r.get_i32("n_kv_heads", m.n_kv_heads, false, 0, kI32Max) &&
                  r.get_i32("head_dim", m.head_dim, false, 0, kI32Max) &&
                  r.get_i32("hidden_dim", m.hidden_dim, false, 0, kI32Max) &&
                  r.get_int("parameters", m.parameters, false, 0, std::numeric_limits<int64_t>::max()) &&
                  r.get_int("active_parameters", m.active_parameters, false, 0, std::numeric_limits<int64_t>::max()) &&
                  r.get_i32("n_experts", m.n_experts, false, 0, kI32Max) &&
                  r.get_i32("n_experts_used", m.n_experts_used, false, 0, kI32Max) &&
                  r.get_i32("expert_hidden_dim", m.expert_hidden_dim, false, 0, kI32Max) &&
                  r.get_i32("bos", m.bos, false, -1, kI32Max) && r.get_i32("eos", m.eos, false, -1, kI32Max) &&
                  r.get_bool("add_bos", m.add_bos, false) && r.get_string("device", m.device, false, SIZE_MAX) &&
                  r.get_string("kv_type", m.kv_type, false, SIZE_MAX) &&
                  r.get_int("kv_bytes_per_token", m.kv_bytes_per_token, false, 0, std::numeric_limits<int64_t>::max());
  if (!ok) outer.fail_from(r);
  return ok;
}

bool read_limits(const msgpack::object& map, ProtocolLimits& l, MapReader& outer) {
  MapReader r(map, "limits");
  int64_t frame = l.max_frame_bytes;
  uint64_t output = l.max_output_bytes;
  const bool ok = r.get_int("max_frame_bytes", frame, false, 0, UINT32_MAX) &&
                  r.get_i32("max_prompt_tokens", l.max_prompt_tokens, false, 0, kI32Max) &&
                  r.get_i32("max_tokens", l.max_tokens, false, 0, kI32Max) &&
                  r.get_i32("max_requests_per_connection", l.max_requests_per_connection, false, 0, kI32Max) &&
                  r.get_u64("max_output_bytes", output, false) &&
                  r.get_i32("max_queued", l.max_queued, false, 0, kI32Max) &&
                  r.get_i32("max_stop_strings", l.max_stop_strings, false, 0, kI32Max) &&
                  r.get_i32("max_stop_string_bytes", l.max_stop_string_bytes, false, 0, kI32Max) &&
                  r.get_i32("max_stop_token_ids", l.max_stop_token_ids, false, 0, kI32Max) &&
                  r.get_i32("max_logit_bias", l.max_logit_bias, false, 0, kI32Max) &&
                  r.get_i32("max_logprobs", l.max_logprobs, false, 0, kI32Max) &&
                  r.get_i32("max_detokenize_ids", l.max_detokenize_ids, false, 0, kI32Max) &&
                  r.get_i32("max_tag_bytes", l.max_tag_bytes, false, 0, kI32Max) &&
                  r.get_int("max_deadline_ms", l.max_deadline_ms, false, 0, kI64Max);
  if (!ok) {
    outer.fail_from(r);
    return false;
  }
  l.max_frame_bytes = static_cast<uint32_t>(frame);
  l.max_output_bytes = output;
  return true;
}

bool read_stats(const msgpack::object& map, StatsSnapshot& s, MapReader& outer) {
  MapReader r(map, "stats");
  const bool ok =
      r.get_i32("waiting", s.waiting, false, 0, kI32Max) && r.get_i32("running", s.running, false, 0, kI32Max) &&
      r.get_i32("kv_blocks_total", s.kv_blocks_total, false, 0, kI32Max) &&
      r.get_i32("kv_blocks_used", s.kv_blocks_used, false, 0, kI32Max) &&
      r.get_int("kv_bytes_per_token", s.kv_bytes_per_token, false, 0, std::numeric_limits<int64_t>::max()) &&
      r.get_double("kv_usage", s.kv_usage, false, 0, kDMax) && read_kv_pools(r, s.kv_pools) &&
      r.get_i32("cpu_expert_layers", s.cpu_expert_layers, false, 0, kI32Max) &&
      r.get_int("prefix_hit_tokens", s.prefix_hit_tokens, false, 0, kI64Max) &&
      r.get_int("prefix_query_tokens", s.prefix_query_tokens, false, 0, kI64Max) &&
      r.get_double("prefix_hit_rate", s.prefix_hit_rate, false, 0, kDMax) &&
      r.get_int("requests_finished", s.requests_finished, false, 0, kI64Max) &&
      r.get_int("tokens_generated", s.tokens_generated, false, 0, kI64Max) &&
      r.get_int("prompt_tokens_processed", s.prompt_tokens_processed, false, 0, kI64Max) &&
      r.get_double("decode_tokens_per_s", s.decode_tokens_per_s, false, 0, kDMax) &&
      r.get_int("draft_tokens", s.draft_tokens, false, 0, kI64Max) &&
      r.get_int("accepted_tokens", s.accepted_tokens, false, 0, kI64Max) &&
      r.get_double("draft_acceptance_rate", s.draft_acceptance_rate, false, 0, kDMax) &&
      read_histogram(r, "ttft_ms", s.ttft_ms) && read_histogram(r, "itl_ms", s.itl_ms) &&
      r.get_i32("connections", s.server.connections, false, 0, kI32Max) &&
      r.get_i32("zmq_peers", s.server.zmq_peers, false, 0, kI32Max) &&
      r.get_i32("subscriptions", s.server.subscriptions, false, 0, kI32Max) &&
      r.get_i32("retained_requests", s.server.retained_requests, false, 0, kI32Max) &&
      r.get_int("requests_total", s.server.requests_total, false, 0, kI64Max) &&
      r.get_int("requests_rejected", s.server.requests_rejected, false, 0, kI64Max) &&
      r.get_double("uptime_s", s.server.uptime_s, false, 0, kDMax);
  if (!ok) outer.fail_from(r);
  return ok;
}

}  // namespace detail

namespace {

Result<AnswerBody> parse_answer_body(std::string_view type, const msgpack::object& root, MapReader& r) {
  auto fail = [&]() -> Result<AnswerBody> { return r.take_error(); };
  // "error" is a direct answer unless it carries a seq (then it is a request's stream event).
  const bool stream_error = type == "error" && r.has("seq");
  if (const auto ev_type = parse_stream_event_name(type); ev_type && (type != "error" || stream_error)) {
    StreamEvent ev;
    if (!detail::read_event(root, *ev_type, ev, r)) return fail();
    return AnswerBody(std::move(ev));
  }
  if (type == "hello") {
    HelloAnswer h;
    const msgpack::object* model = nullptr;
    const msgpack::object* limits = nullptr;
    if (!r.get_i32("version", h.version, true, 0, kI32Max) || !r.get_string("server", h.server, false, SIZE_MAX) ||
        !r.get_map("model", model, false) || !r.get_map("limits", limits, false) ||
        !r.get_string("pub_endpoint", h.pub_endpoint, false, SIZE_MAX) ||
        !r.get_string("router_endpoint", h.router_endpoint, false, SIZE_MAX) ||
        !r.get_int("retention_ms", h.retention_ms, false, 0, kI64Max))
      return fail();
    if (model && !detail::read_model(*model, h.model, r)) return fail();
    if (limits && !detail::read_limits(*limits, h.limits, r)) return fail();
    return AnswerBody(std::move(h));
  }
  if (type == "accepted") {
    AcceptedAnswer a;
    if (!r.get_string("id", a.id, true, 1024) || !r.get_string("topic", a.topic, false, 1024) ||
        !r.get_i32("queue_position", a.queue_position, false, -1, kI32Max) ||
        !r.get_i32("prompt_tokens", a.prompt_tokens, false, 0, kI32Max) || !r.get_bool("detached", a.detached, false) ||
        !r.get_string("model", a.model, false, SIZE_MAX))
      return fail();
    return AnswerBody(std::move(a));
  }
  if (type == "cancelled") {
    CancelledAnswer c;
    if (!r.get_string("id", c.id, true, 1024)) return fail();
    return AnswerBody(std::move(c));
  }
  if (type == "status") {
    StatusAnswer s;
    std::string state;
    std::string reason;
    if (!r.get_string("id", s.id, true, 1024) || !r.get_string("state", state, true, 64) ||
        !r.get_string("topic", s.topic, false, 1024) || !r.get_int("last_seq", s.last_seq, false, -1, kI64Max) ||
        !r.get_i32("queue_position", s.queue_position, false, -1, kI32Max) ||
        !r.get_i32("prompt_tokens", s.prompt_tokens, false, 0, kI32Max) ||
        !r.get_i32("generated_tokens", s.generated_tokens, false, 0, kI32Max) ||
        !r.get_bool("detached", s.detached, false) || !r.get_string("reason", reason, false, 64))
      return fail();
    const auto st = parse_request_state(state);
    if (!st) {
      r.fail(WireError::kInvalidField, "state", "unknown state \"" + state + "\"");
      return fail();
    }
    s.state = *st;
    if (!reason.empty()) {
      s.reason = parse_finish_reason(reason);
      if (!s.reason) {
        r.fail(WireError::kInvalidField, "reason", "unknown finish reason \"" + reason + "\"");
        return fail();
      }
    }
    return AnswerBody(std::move(s));
  }
  if (type == "stats") {
    StatsAnswer s;
    std::string format = "map";
    if (!r.get_string("format", format, false, 64)) return fail();
    if (format == "prometheus") {
      s.format = StatsFormat::kPrometheus;
      if (!r.get_string("text", s.text, true, SIZE_MAX)) return fail();
    } else {
      const msgpack::object* stats = nullptr;
      if (!r.get_map("stats", stats, true)) return fail();
      if (!detail::read_stats(*stats, s.stats, r)) return fail();
    }
    return AnswerBody(std::move(s));
  }
  if (type == "error") {
    ErrorAnswer e;
    std::string code;
    if (!r.get_string("code", code, true, 256) || !r.get_string("message", e.error.message, false, SIZE_MAX) ||
        !r.get_string("field", e.error.field, false, SIZE_MAX) || !r.get_string("id", e.id, false, 1024) ||
        !r.get_i32("retry_after_ms", e.retry_after_ms, false, 0, kI32Max))
      return fail();
    e.error.code = parse_wire_error(code).value_or(WireError::kInternal);
    return AnswerBody(std::move(e));
  }
  if (type == "tokenize") {
    TokenizeAnswer t;
    if (!read_ids(r, "ids", t.ids, true)) return fail();
    return AnswerBody(std::move(t));
  }
  if (type == "detokenize") {
    DetokenizeAnswer d;
    if (!r.get_string("text", d.text, true, SIZE_MAX)) return fail();
    return AnswerBody(std::move(d));
  }
  if (type == "embed") {
    EmbedAnswer e;
    if (!detail::parse_embed_answer(r, e)) return fail();
    return AnswerBody(std::move(e));
  }
  if (type == "model") {
    ModelAnswer m;
    const msgpack::object* model = nullptr;
    if (!r.get_map("model", model, true) || !detail::read_model(*model, m.model, r)) return fail();
    return AnswerBody(std::move(m));
  }
  if (type == "models") {
    ModelsAnswer m;
    const msgpack::object* list = nullptr;
    if (!r.get_array("models", list, true, std::numeric_limits<uint32_t>::max()) ||
        !r.get_i32("max_loaded", m.max_loaded, false, 0, kI32Max))
      return fail();
    for (uint32_t i = 0; i < list->via.array.size; ++i) {
      ServableModelEntry e;
      if (!read_servable_model(list->via.array.ptr[i], "models." + std::to_string(i), e, r)) return fail();
      m.models.push_back(std::move(e));
    }
    return AnswerBody(std::move(m));
  }
  if (type == "loaded") {
    LoadedAnswer l;
    if (!r.get_string("model", l.model, true, SIZE_MAX) || !r.get_double("load_ms", l.load_ms, false, 0, kDMax))
      return fail();
    return AnswerBody(std::move(l));
  }
  if (type == "unloaded") {
    UnloadedAnswer u;
    if (!r.get_string("model", u.model, true, SIZE_MAX) || !r.get_bool("was_loaded", u.was_loaded, false))
      return fail();
    return AnswerBody(std::move(u));
  }
  if (type == "pulled") {
    PulledAnswer p;
    if (!r.get_string("model", p.model, true, SIZE_MAX) || !r.get_string("path", p.path, false, SIZE_MAX) ||
        !r.get_u64("size_bytes", p.size_bytes, false) || !r.get_u64("downloaded_bytes", p.downloaded_bytes, false))
      return fail();
    return AnswerBody(std::move(p));
  }
  if (type == "pull_progress") {
    PullProgressAnswer p;
    if (!r.get_string("model", p.model, true, SIZE_MAX) || !r.get_u64("completed", p.completed, false) ||
        !r.get_u64("total", p.total, false))
      return fail();
    return AnswerBody(std::move(p));
  }
  if (type == "deleted") {
    DeletedAnswer d;
    if (!r.get_string("model", d.model, true, SIZE_MAX)) return fail();
    return AnswerBody(std::move(d));
  }
  if (type == "replay") {
    ReplayAnswer p;
    const msgpack::object* events = nullptr;
    if (!r.get_string("id", p.id, true, 1024) ||
        !r.get_array("events", events, true, std::numeric_limits<uint32_t>::max()) ||
        !r.get_int("next_seq", p.next_seq, false, 0, kI64Max) || !r.get_bool("finished", p.finished, false) ||
        !r.get_bool("truncated", p.truncated, false))
      return fail();
    for (uint32_t i = 0; i < events->via.array.size; ++i) {
      const msgpack::object& o = events->via.array.ptr[i];
      const std::string field = "events." + std::to_string(i);
      if (o.type != msgpack::type::MAP) {
        r.fail_type(field, "event map");
        return fail();
      }
      MapReader er(o, field);
      std::string etype;
      if (!er.get_string("type", etype, true, 64)) return er.take_error();
      const auto et = parse_stream_event_name(etype);
      if (!et) return make_error(WireError::kUnknownType, "unknown event type \"" + etype + "\"", field + ".type");
      StreamEvent ev;
      if (!detail::read_event(o, *et, ev, er)) return er.take_error();
      p.events.push_back(std::move(ev));
    }
    return AnswerBody(std::move(p));
  }
  return make_error(WireError::kUnknownType, "unknown message type \"" + std::string(type.substr(0, 64)) + "\"", "type");
}

}  // namespace

Result<ServerMessage> parse_server_message(std::string_view payload) {
  try {
    Result<msgpack::object_handle> decoded = detail::decode(payload);
    if (!decoded) return decoded.error();
    const msgpack::object& root = decoded->get();
    if (root.type != msgpack::type::MAP)
      return make_error(WireError::kInvalidRequest, "a message must be a msgpack map, got " + std::string(detail::type_name(root)));
    MapReader r(root);
    std::string type;
    if (!r.get_string("type", type, true, 64)) return make_error(WireError::kInvalidRequest, r.error().message, "type");
    ServerMessage m;
    std::optional<Tag> tag = detail::read_tag(root, SIZE_MAX);
    if (!tag) return make_error(WireError::kInvalidField, "tag: must be an integer or a string", "tag");
    m.tag = std::move(*tag);
    Result<AnswerBody> body = parse_answer_body(type, root, r);
    if (!body) return body.error();
    m.body = std::move(body.value());
    return m;
  } catch (const std::exception& e) {
    return make_error(WireError::kInternal, std::string("parser failure: ") + e.what());
  }
}

}  // namespace vks::proto
