#include "server/http/ollama_pull.h"

#include "server/http/json_text.h"

namespace vks::http {

using nlohmann::json;

std::variant<PullCall, ApiError> read_pull_call(const JsonBody& body) {
  PullCall call;
  for (const char* key : {"name", "model"}) {  // `model` wins when both are given
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) continue;
    if (!it->is_string()) return bad_field(std::string(key) + " must be a string", key);
    call.name = it->get<std::string>();
  }
  if (call.name.empty()) return bad_field("model is required", "model", "missing_field");
  if (const auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return bad_field("stream must be true or false", "stream");
    call.stream = it->get<bool>();
  }
  if (const auto it = body.find("insecure"); it != body.end() && !it->is_null() && !it->is_boolean()) {
    return bad_field("insecure must be true or false", "insecure");
  }
  return call;
}

std::string ndjson_line(const json& line) { return compact_dump(line) + "\n"; }

json ollama_pull_status(const std::string& status) { return json{{"status", status}}; }

json ollama_pull_progress(const PullProgress& p) {
  // Ollama names a layer by its digest's first 12 hex digits.
  const std::string hex = p.digest.rfind("sha256:", 0) == 0 ? p.digest.substr(7) : std::string();
  json line{{"status", "pulling " + (hex.empty() ? p.file : hex.substr(0, 12))}};
  if (!p.digest.empty()) line["digest"] = p.digest;
  line["total"] = p.total;
  line["completed"] = p.completed;
  return line;
}

std::string ollama_pull_success_lines() {
  return ndjson_line(ollama_pull_status("verifying sha256 digest")) + ndjson_line(ollama_pull_status("writing manifest")) +
         ndjson_line(ollama_pull_status("success"));
}

ApiError ollama_store_error(const proto::ProtocolError& error) {
  ApiError e = api_error_from_wire(error, 1000, {});
  switch (error.code) {
    case proto::WireError::kPullFailed: e.status = 502; break;   // the source failed, not the request
    case proto::WireError::kOverloaded: e.status = 409; e.retry_after_s = 0; break;  // in use: a conflict
    case proto::WireError::kUnsupported: e.status = 403; break;  // not the server's to delete / pull
    default: break;
  }
  return e;
}

}  // namespace vks::http
