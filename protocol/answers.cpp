// Encoders for the server's direct answers (everything except stream events lives here).
#include "protocol/embed_wire.h"
#include "protocol/msgpack_io.h"
#include "protocol/overloaded.h"
#include "protocol/responses.h"
#include "protocol/wire_fields.h"

namespace vks::proto {
namespace {

using detail::Overloaded;

void pack_histogram(detail::MapWriter& w, std::string_view key, const Histogram& h) {
  detail::MapWriter m;
  m.u64("count", h.count).f64("sum", h.sum).f64("p50", h.p50).f64("p90", h.p90).f64("p99", h.p99);
  {
    auto& pk = m.key("bounds");
    pk.pack_array(static_cast<uint32_t>(h.bounds.size()));
    for (double b : h.bounds) detail::pack_f64(m.body(), b);
  }
  {
    auto& pk = m.key("cumulative");
    pk.pack_array(static_cast<uint32_t>(h.cumulative.size()));
    for (uint64_t c : h.cumulative) pk.pack_uint64(c);
  }
  w.raw(key, m.finish());
}

}  // namespace

namespace detail {

std::string pack_model(const ModelInfo& m) {
  MapWriter w;
  w.str("name", m.name).str("architecture", m.architecture);
  w.i64("vocab_size", m.vocab_size).i64("context_length", m.context_length).i64("dim", m.dim);
  w.i64("n_layers", m.n_layers).i64("n_heads", m.n_heads).i64("n_kv_heads", m.n_kv_heads);
  w.i64("head_dim", m.head_dim).i64("hidden_dim", m.hidden_dim);
  w.i64("parameters", m.parameters).i64("active_parameters", m.active_parameters);
  w.i64("n_experts", m.n_experts).i64("n_experts_used", m.n_experts_used).i64("expert_hidden_dim", m.expert_hidden_dim);
  w.i64("bos", m.bos).i64("eos", m.eos).boolean("add_bos", m.add_bos).str("device", m.device);
  w.str("kv_type", m.kv_type).i64("kv_bytes_per_token", m.kv_bytes_per_token);
  return w.finish();
}

std::string pack_limits(const ProtocolLimits& l) {
  MapWriter w;
  w.u64("max_frame_bytes", l.max_frame_bytes).i64("max_prompt_tokens", l.max_prompt_tokens);
  w.i64("max_tokens", l.max_tokens).i64("max_requests_per_connection", l.max_requests_per_connection);
  w.u64("max_output_bytes", l.max_output_bytes).i64("max_queued", l.max_queued);
  w.i64("max_stop_strings", l.max_stop_strings).i64("max_stop_string_bytes", l.max_stop_string_bytes);
  w.i64("max_stop_token_ids", l.max_stop_token_ids).i64("max_logit_bias", l.max_logit_bias);
  w.i64("max_logprobs", l.max_logprobs).i64("max_detokenize_ids", l.max_detokenize_ids);
  w.i64("max_tag_bytes", l.max_tag_bytes).i64("max_deadline_ms", l.max_deadline_ms);
  return w.finish();
}

void pack_kv_pools(detail::MapWriter& w, const std::vector<KvPoolSnapshot>& pools) {
  auto& pk = w.key("kv_pools");
  pk.pack_array(static_cast<uint32_t>(pools.size()));
  for (const KvPoolSnapshot& p : pools) {
    detail::MapWriter m;
    m.str("kind", p.kind).i64("layers", p.layers).i64("window", p.window);
    m.i64("blocks_total", p.blocks_total).i64("blocks_used", p.blocks_used).i64("blocks_cached", p.blocks_cached);
    m.i64("bytes_total", p.bytes_total).i64("bytes_used", p.bytes_used);
    w.body().append(m.finish());
  }
}

std::string pack_stats(const StatsSnapshot& s) {
  MapWriter w;
  w.i64("waiting", s.waiting).i64("running", s.running);
  w.i64("kv_blocks_total", s.kv_blocks_total).i64("kv_blocks_used", s.kv_blocks_used).f64("kv_usage", s.kv_usage);
  w.i64("kv_bytes_per_token", s.kv_bytes_per_token);
  pack_kv_pools(w, s.kv_pools);
  w.i64("cpu_expert_layers", s.cpu_expert_layers);
  w.i64("prefix_hit_tokens", s.prefix_hit_tokens).i64("prefix_query_tokens", s.prefix_query_tokens);
  w.f64("prefix_hit_rate", s.prefix_hit_rate);
  w.i64("requests_finished", s.requests_finished).i64("tokens_generated", s.tokens_generated);
  w.i64("prompt_tokens_processed", s.prompt_tokens_processed).f64("decode_tokens_per_s", s.decode_tokens_per_s);
  w.i64("draft_tokens", s.draft_tokens).i64("accepted_tokens", s.accepted_tokens);
  w.f64("draft_acceptance_rate", s.draft_acceptance_rate);
  pack_histogram(w, "ttft_ms", s.ttft_ms);
  pack_histogram(w, "itl_ms", s.itl_ms);
  w.i64("connections", s.server.connections).i64("zmq_peers", s.server.zmq_peers);
  w.i64("subscriptions", s.server.subscriptions).i64("retained_requests", s.server.retained_requests);
  w.i64("requests_total", s.server.requests_total).i64("requests_rejected", s.server.requests_rejected);
  w.f64("uptime_s", s.server.uptime_s);
  return w.finish();
}

}  // namespace detail

std::string_view answer_type_name(const AnswerBody& body) {
  return std::visit(Overloaded{
                        [](const HelloAnswer&) { return std::string_view("hello"); },
                        [](const AcceptedAnswer&) { return std::string_view("accepted"); },
                        [](const CancelledAnswer&) { return std::string_view("cancelled"); },
                        [](const StatusAnswer&) { return std::string_view("status"); },
                        [](const StatsAnswer&) { return std::string_view("stats"); },
                        [](const ErrorAnswer&) { return std::string_view("error"); },
                        [](const TokenizeAnswer&) { return std::string_view("tokenize"); },
                        [](const DetokenizeAnswer&) { return std::string_view("detokenize"); },
                        [](const ModelAnswer&) { return std::string_view("model"); },
                        [](const ReplayAnswer&) { return std::string_view("replay"); },
                        [](const EmbedAnswer&) { return std::string_view("embed"); },
                        [](const ModelsAnswer&) { return std::string_view("models"); },
                        [](const LoadedAnswer&) { return std::string_view("loaded"); },
                        [](const UnloadedAnswer&) { return std::string_view("unloaded"); },
                        [](const PulledAnswer&) { return std::string_view("pulled"); },
                        [](const PullProgressAnswer&) { return std::string_view("pull_progress"); },
                        [](const DeletedAnswer&) { return std::string_view("deleted"); },
                        [](const StreamEvent& e) { return stream_event_name(e.type); },
                    },
                    body);
}

std::string encode_answer(const AnswerBody& body, const Tag& tag) {
  if (const auto* ev = std::get_if<StreamEvent>(&body)) return encode_event(*ev);  // events carry no tag
  detail::MapWriter w;
  w.str("type", answer_type_name(body));
  w.tag(tag);
  std::visit(Overloaded{
                 [&](const HelloAnswer& h) {
                   w.i64("version", h.version).str("server", h.server);
                   w.raw("model", detail::pack_model(h.model)).raw("limits", detail::pack_limits(h.limits));
                   w.str("pub_endpoint", h.pub_endpoint).str("router_endpoint", h.router_endpoint);
                   w.i64("retention_ms", h.retention_ms);
                 },
                 [&](const AcceptedAnswer& a) {
                   w.str("id", a.id).str("topic", a.topic).i64("queue_position", a.queue_position);
                   w.i64("prompt_tokens", a.prompt_tokens).boolean("detached", a.detached);
                   if (!a.model.empty()) w.str("model", a.model);
                 },
                 [&](const CancelledAnswer& c) { w.str("id", c.id); },
                 [&](const StatusAnswer& s) {
                   w.str("id", s.id).str("state", request_state_name(s.state)).str("topic", s.topic);
                   w.i64("last_seq", s.last_seq);
                   if (s.state == RequestState::kQueued) w.i64("queue_position", s.queue_position);
                   w.i64("prompt_tokens", s.prompt_tokens).i64("generated_tokens", s.generated_tokens);
                   w.boolean("detached", s.detached);
                   if (s.reason) w.str("reason", finish_reason_wire_name(*s.reason));
                 },
                 [&](const StatsAnswer& s) {
                   if (s.format == StatsFormat::kPrometheus) {
                     w.str("format", "prometheus").str("text", s.text);
                   } else {
                     w.str("format", "map").raw("stats", detail::pack_stats(s.stats));
                   }
                 },
                 [&](const ErrorAnswer& e) {
                   w.str("code", wire_error_name(e.error.code)).str("message", e.error.message);
                   if (!e.error.field.empty()) w.str("field", e.error.field);
                   if (!e.id.empty()) w.str("id", e.id);
                   if (e.retry_after_ms > 0) w.i64("retry_after_ms", e.retry_after_ms);
                 },
                 [&](const TokenizeAnswer& t) { w.raw("ids", detail::pack_int_array(t.ids.data(), t.ids.size())); },
                 [&](const DetokenizeAnswer& d) { w.str("text", d.text); },
                 [&](const ModelAnswer& m) { w.raw("model", detail::pack_model(m.model)); },
                 [&](const ReplayAnswer& p) {
                   std::string events;
                   detail::StringSink sink{&events};
                   msgpack::packer<detail::StringSink> pk(sink);
                   pk.pack_array(static_cast<uint32_t>(p.events.size()));
                   for (const StreamEvent& ev : p.events) events.append(encode_event(ev));
                   w.str("id", p.id).raw("events", events).i64("next_seq", p.next_seq);
                   w.boolean("finished", p.finished).boolean("truncated", p.truncated);
                 },
                 [&](const StreamEvent&) {},
                 [&](const EmbedAnswer& e) { detail::encode_embed_answer(w, e); },
                 [&](const ModelsAnswer& m) {
                   std::string list;
                   detail::StringSink sink{&list};
                   msgpack::packer<detail::StringSink> pk(sink);
                   pk.pack_array(static_cast<uint32_t>(m.models.size()));
                   for (const ServableModelEntry& e : m.models) {
                     detail::MapWriter entry;
                     entry.str("name", e.name).str("path", e.path).u64("size_bytes", e.size_bytes);
                     entry.boolean("loaded", e.loaded).boolean("loading", e.loading).boolean("pinned", e.pinned);
                     entry.boolean("default", e.is_default).i64("running", e.running);
                     entry.u64("resident_bytes", e.resident_bytes).i64("expires_in_ms", e.expires_in_ms);
                     entry.str("device", e.device);
                     entry.finish_into(list);
                   }
                   w.raw("models", list).i64("max_loaded", m.max_loaded);
                 },
                 [&](const LoadedAnswer& l) { w.str("model", l.model).f64("load_ms", l.load_ms); },
                 [&](const UnloadedAnswer& u) { w.str("model", u.model).boolean("was_loaded", u.was_loaded); },
                 [&](const PulledAnswer& p) {
                   w.str("model", p.model).str("path", p.path).u64("size_bytes", p.size_bytes);
                   w.u64("downloaded_bytes", p.downloaded_bytes);
                 },
                 [&](const PullProgressAnswer& p) {
                   w.str("model", p.model).u64("completed", p.completed).u64("total", p.total);
                 },
                 [&](const DeletedAnswer& d) { w.str("model", d.model); },
             },
             body);
  return w.finish();
}

std::string encode_error(const ProtocolError& error, const Tag& tag, std::string_view id, int32_t retry_after_ms) {
  return encode_answer(ErrorAnswer{error, std::string(id), retry_after_ms}, tag);
}

std::string encode_replay_raw(std::string_view id, std::span<const std::string> event_payloads, int64_t first_seq,
                              bool finished, const Tag& tag, size_t max_bytes) {
  // Fixed part: type, tag, id, next_seq, finished, truncated and the array header stay under 512
  // bytes beyond the id and tag.
  const size_t overhead = 512 + id.size() + (tag.kind == Tag::Kind::kString ? tag.s.size() : 0);
  size_t n = 0;
  size_t bytes = overhead;
  while (n < event_payloads.size()) {
    const size_t next = bytes + event_payloads[n].size();
    if (n > 0 && next > max_bytes) break;
    bytes = next;
    ++n;
  }
  const bool truncated = n < event_payloads.size();
  std::string events;
  events.reserve(bytes);
  {
    detail::StringSink sink{&events};
    msgpack::packer<detail::StringSink> pk(sink);
    pk.pack_array(static_cast<uint32_t>(n));
  }
  for (size_t i = 0; i < n; ++i) events.append(event_payloads[i]);
  detail::MapWriter w;
  w.str("type", "replay");
  w.tag(tag);
  w.str("id", id).raw("events", events).i64("next_seq", first_seq + static_cast<int64_t>(n));
  w.boolean("finished", finished).boolean("truncated", truncated);
  return w.finish();
}

}  // namespace vks::proto
