// Parsing of stream events and the default endpoints (docs/PROTOCOL.md).
#include <cstdlib>
#include <unistd.h>

#include "vkstream/types.h"

namespace vkstream {

std::string default_runtime_dir() {
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/vkstream";
  }
  return "/run/vkstream";
}

Endpoint default_endpoint() {
  const std::string dir = default_runtime_dir();
  return Endpoint{dir + "/vkstream.sock", "ipc://" + dir + "/router.zmq", "ipc://" + dir + "/pub.zmq"};
}

namespace {

EventKind kind_of(const std::string& type) {
  if (type == "token") return EventKind::kToken;
  if (type == "finished") return EventKind::kFinished;
  if (type == "queued") return EventKind::kQueued;
  if (type == "scheduled") return EventKind::kScheduled;
  if (type == "preempted") return EventKind::kPreempted;
  if (type == "error") return EventKind::kError;
  if (type == "tool_call") return EventKind::kToolCall;
  if (type == "progress") return EventKind::kProgress;
  return EventKind::kOther;
}

int32_t to_i32(const Value& v) { return static_cast<int32_t>(v.as_int().value_or(0)); }

}  // namespace

Event parse_event(const Value& map) {
  Event ev;
  ev.type = map.get_string("type");
  ev.kind = kind_of(ev.type);
  ev.id = map.get_string("id");
  ev.seq = map.get_int("seq", -1);
  ev.queue_position = map.get_int("queue_position", -1);
  if (const Value* ids = map.find("ids"); ids != nullptr && ids->as_array() != nullptr) {
    for (const Value& i : *ids->as_array()) ev.ids.push_back(to_i32(i));
  }
  ev.text = map.get_string("text");
  if (const Value* lp = map.find("logprobs"); lp != nullptr && lp->as_array() != nullptr) {
    for (const Value& t : *lp->as_array()) {
      TokenLogprobs tl;
      tl.id = static_cast<int32_t>(t.get_int("id"));
      tl.logprob = t.get_double("logprob");
      if (const Value* top = t.find("top"); top != nullptr && top->as_array() != nullptr) {
        for (const Value& a : *top->as_array()) {
          tl.top.push_back({static_cast<int32_t>(a.get_int("id")), a.get_double("logprob")});
        }
      }
      ev.logprobs.push_back(std::move(tl));
    }
  }
  ev.finish_reason = map.get_string("reason");
  if (const Value* u = map.find("usage")) {
    ev.usage = {u->get_int("prompt_tokens"), u->get_int("cached_tokens"), u->get_int("generated_tokens")};
  }
  if (const Value* t = map.find("timings")) {
    ev.timings = {t->get_double("queue_ms"), t->get_double("ttft_ms"), t->get_double("total_ms"),
                  static_cast<int32_t>(t->get_int("draft_tokens")), static_cast<int32_t>(t->get_int("accepted_tokens"))};
  }
  if (ev.kind == EventKind::kProgress) {  // its counts are top-level fields
    ev.usage.prompt_tokens = map.get_int("prompt_tokens");
    ev.usage.cached_tokens = map.get_int("cached_tokens");
    ev.prompt_tokens_done = map.get_int("prompt_tokens_done");
  }
  ev.error_code = map.get_string("code");
  ev.error_message = map.get_string("message");
  if (ev.kind == EventKind::kToolCall) {
    ev.tool_call = {map.get_int("index"), map.get_string("call_id"), map.get_string("name"), map.get_string("arguments")};
  }
  ev.raw = map;
  return ev;
}

}  // namespace vkstream
