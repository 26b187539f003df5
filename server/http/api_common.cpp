#include "server/http/api_common.h"

#include <cstdio>
#include <ctime>

namespace vks::http {

using nlohmann::json;

bool ModelCatalogue::matches(const std::string& requested) const {
  if (requested.empty() || requested == id || requested == id + ":latest") return true;
  return !info.name.empty() && (requested == info.name || requested == info.name + ":latest");
}

namespace {

std::string api_name(const std::string& wire_field, const std::map<std::string, std::string>& names) {
  if (wire_field.empty()) return {};
  // Dotted paths ("logit_bias.17", "stop.2"): rename the head.
  const size_t dot = wire_field.find('.');
  const std::string head = wire_field.substr(0, dot);
  auto it = names.find(head);
  const std::string renamed = it == names.end() ? head : it->second;
  return dot == std::string::npos ? renamed : renamed + wire_field.substr(dot);
}

}  // namespace

ApiError api_error_from_wire(const proto::ProtocolError& error, int32_t retry_after_ms,
                             const std::map<std::string, std::string>& param_names) {
  ApiError e;
  e.code = std::string(proto::wire_error_name(error.code));
  e.param = api_name(error.field, param_names);
  e.message = error.message;
  if (!e.param.empty() && e.param != error.field && !error.field.empty()) {
    // A message led by the wire's name ("json_schema: ...") is led by the client's ("format: ...");
    // an Ollama error has no param, only its message, to say which field it was.
    if (e.message.rfind(error.field + ": ", 0) == 0) {
      e.message = e.param + e.message.substr(error.field.size());
    } else {
      e.message += " (wire field '" + error.field + "')";
    }
  }
  switch (error.code) {
    case proto::WireError::kNotFound: e.status = 404; break;
    case proto::WireError::kAlreadyExists: e.status = 409; break;
    case proto::WireError::kOverloaded:
    case proto::WireError::kTooManyRequests:
      e.status = 429;
      e.retry_after_s = std::max<int32_t>(1, (retry_after_ms + 999) / 1000);
      break;
    case proto::WireError::kShuttingDown: e.status = 503; break;
    case proto::WireError::kUnsupported: e.status = 501; break;
    case proto::WireError::kInternal:
    case proto::WireError::kDeviceError:
    case proto::WireError::kModelLoadFailed: e.status = 500; break;
    default: e.status = 400; break;
  }
  return e;
}

namespace {

// The wire map (with its "type") → the parsed request body, through the Unix socket's own parser.
std::variant<proto::RequestBody, ApiError> parse_wire(const json& wire, const proto::ProtocolLimits& limits,
                                                      const std::map<std::string, std::string>& param_names) {
  std::vector<uint8_t> packed;
  try {
    packed = json::to_msgpack(wire);
  } catch (const json::exception& e) {
    return ApiError{400, std::string("cannot encode the request: ") + e.what(), "invalid_request", {}, 0};
  }
  const std::string payload(packed.begin(), packed.end());
  proto::Result<proto::Request> parsed = proto::parse_request(payload, limits);
  if (!parsed) return api_error_from_wire(parsed.error(), 0, param_names);
  return std::move(parsed->body);
}

template <typename Message>
std::variant<Message, ApiError> parse_wire_as(json wire, const char* type, const proto::ProtocolLimits& limits,
                                              const std::map<std::string, std::string>& param_names) {
  wire["type"] = type;
  auto body = parse_wire(wire, limits, param_names);
  if (auto* e = std::get_if<ApiError>(&body)) return std::move(*e);
  auto* message = std::get_if<Message>(&std::get<proto::RequestBody>(body));
  if (message == nullptr) return ApiError{500, std::string("internal: not a ") + type + " request", "internal", {}, 0};
  return std::move(*message);
}

}  // namespace

std::variant<proto::GenerateMessage, ApiError> to_generate_message(
    json wire, const proto::ProtocolLimits& limits, const std::map<std::string, std::string>& param_names) {
  return parse_wire_as<proto::GenerateMessage>(std::move(wire), "generate", limits, param_names);
}

std::variant<proto::ChatRequest, ApiError> to_chat_request(json wire, const proto::ProtocolLimits& limits,
                                                           const std::map<std::string, std::string>& param_names) {
  return parse_wire_as<proto::ChatRequest>(std::move(wire), "chat", limits, param_names);
}

std::variant<proto::EmbedRequest, ApiError> to_embed_request(json wire, const proto::ProtocolLimits& limits,
                                                             const std::map<std::string, std::string>& param_names) {
  return parse_wire_as<proto::EmbedRequest>(std::move(wire), "embed", limits, param_names);
}

void copy_field(const json& body, const char* api_field, json& wire, const char* wire_field) {
  auto it = body.find(api_field);
  if (it != body.end() && !it->is_null()) wire[wire_field] = *it;
}

void copy_field(const JsonBody& body, const char* api_field, json& wire, const char* wire_field) {
  auto it = body.find(api_field);
  if (it != body.end() && !it->is_null()) wire[wire_field] = json(*it);
}

ApiError bad_field(std::string message, std::string param, std::string code) {
  return ApiError{400, std::move(message), std::move(code), std::move(param), 0};
}

std::string finish_reason_text(proto::FinishReason reason) {
  switch (reason) {
    case proto::FinishReason::kStop: return "stop";
    case proto::FinishReason::kLength: return "length";
    case proto::FinishReason::kCancelled: return "cancelled";
    case proto::FinishReason::kDeadline: return "deadline";
    case proto::FinishReason::kError: return "error";
    case proto::FinishReason::kToolCalls: return "tool_calls";
  }
  return "stop";
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string rfc3339_now() { return rfc3339_at(std::chrono::system_clock::now()); }

std::string rfc3339_at(std::chrono::system_clock::time_point when) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof(frac), ".%09lldZ", static_cast<long long>(ns % 1'000'000'000));
  return std::string(buf, n) + frac;
}

}  // namespace vks::http
