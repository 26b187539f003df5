// Stream events: encoding and the wire names of enums.
#include <array>

#include "protocol/msgpack_io.h"
#include "protocol/responses.h"
#include "protocol/wire_fields.h"

namespace vks::proto {
namespace {

constexpr std::array<std::string_view, 8> kEventNames = {"queued", "scheduled", "preempted", "token",
                                                         "error",  "finished",  "tool_call", "progress"};
constexpr std::array<std::string_view, 6> kReasonNames = {"stop", "length", "cancelled", "deadline", "error", "tool_calls"};
constexpr std::array<std::string_view, 3> kStateNames = {"queued", "running", "finished"};

template <class E, size_t N>
std::optional<E> find_name(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

template <size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, size_t i) {
  return i < N ? names[i] : std::string_view("unknown");
}

}  // namespace

std::string_view stream_event_name(StreamEventType t) { return name_of(kEventNames, static_cast<size_t>(t)); }
std::optional<StreamEventType> parse_stream_event_name(std::string_view name) {
  return find_name<StreamEventType>(kEventNames, name);
}
std::string_view finish_reason_wire_name(FinishReason r) { return name_of(kReasonNames, static_cast<size_t>(r)); }
std::optional<FinishReason> parse_finish_reason(std::string_view name) {
  return find_name<FinishReason>(kReasonNames, name);
}
std::string_view request_state_name(RequestState s) { return name_of(kStateNames, static_cast<size_t>(s)); }
std::optional<RequestState> parse_request_state(std::string_view name) {
  return find_name<RequestState>(kStateNames, name);
}

namespace detail {

void write_event_fields(MapWriter& w, const StreamEvent& ev) {
  w.str("id", ev.id);
  // Progress is not kept for replay, so it takes no number: the stored events keep the same seqs
  // however fast the prompt was read (docs/PROTOCOL.md 5.8).
  if (ev.type != StreamEventType::kProgress) w.i64("seq", ev.seq);
  switch (ev.type) {
    case StreamEventType::kQueued:
      w.i64("queue_position", ev.queue_position);
      if (!ev.model.empty()) w.str("model", ev.model);
      break;
    case StreamEventType::kScheduled:
    case StreamEventType::kPreempted: break;
    case StreamEventType::kToken: {
      w.raw("ids", pack_int_array(ev.ids.data(), ev.ids.size()));
      w.str("text", ev.text);
      if (ev.first) w.boolean("first", true);
      if (!ev.logprobs.empty()) {
        auto& pk = w.key("logprobs");
        pk.pack_array(static_cast<uint32_t>(ev.logprobs.size()));
        for (const GeneratedToken& t : ev.logprobs) {
          pk.pack_map(3);
          pack_str(pk, "id");
          pk.pack_int32(t.id);
          pack_str(pk, "logprob");
          pack_f64(w.body(), t.logprob);
          pack_str(pk, "top");
          pk.pack_array(static_cast<uint32_t>(t.top.size()));
          for (const TokenLogprob& alt : t.top) {
            pk.pack_map(2);
            pack_str(pk, "id");
            pk.pack_int32(alt.id);
            pack_str(pk, "logprob");
            pack_f64(w.body(), alt.logprob);
          }
        }
      }
      break;
    }
    case StreamEventType::kToolCall:
      w.i64("index", ev.call_index);
      w.str("call_id", ev.call_id);
      w.str("name", ev.call_name);
      w.str("arguments", ev.call_arguments);
      break;
    case StreamEventType::kProgress:
      w.i64("prompt_tokens", ev.usage.prompt_tokens);
      w.i64("prompt_tokens_done", ev.prompt_tokens_done);
      w.i64("cached_tokens", ev.usage.cached_tokens);
      break;
    case StreamEventType::kError:
      w.str("code", wire_error_name(ev.error_code));
      w.str("message", ev.error_message);
      break;
    case StreamEventType::kFinished: {
      w.str("reason", finish_reason_wire_name(ev.reason));
      MapWriter usage;
      usage.i64("prompt_tokens", ev.usage.prompt_tokens)
          .i64("cached_tokens", ev.usage.cached_tokens)
          .i64("generated_tokens", ev.usage.generated_tokens);
      w.raw("usage", usage.finish());
      MapWriter timings;
      timings.f64("queue_ms", ev.timings.queue_ms)
          .f64("ttft_ms", ev.timings.ttft_ms)
          .f64("total_ms", ev.timings.total_ms)
          .i64("draft_tokens", ev.timings.draft_tokens)
          .i64("accepted_tokens", ev.timings.accepted_tokens);
      if (ev.timings.load_ms > 0) timings.f64("load_ms", ev.timings.load_ms);
      w.raw("timings", timings.finish());
      if (!ev.model.empty()) w.str("model", ev.model);
      break;
    }
  }
}

}  // namespace detail

std::string encode_event(const StreamEvent& ev) {
  detail::MapWriter w;
  w.str("type", stream_event_name(ev.type));
  detail::write_event_fields(w, ev);
  return w.finish();
}

}  // namespace vks::proto
