#include "engine/sched/engine.h"

namespace vks {

std::string_view event_type_name(EventType t) {
  switch (t) {
    case EventType::kQueued: return "queued";
    case EventType::kScheduled: return "scheduled";
    case EventType::kFirstToken: return "first_token";
    case EventType::kToken: return "token";
    case EventType::kPreempted: return "preempted";
    case EventType::kFinished: return "finished";
    case EventType::kError: return "error";
    case EventType::kProgress: return "progress";
  }
  return "unknown";
}

std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kDeadline: return "deadline";
    case FinishReason::kError: return "error";
  }
  return "unknown";
}

}  // namespace vks
