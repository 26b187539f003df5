#pragma once
// Ollama's model store endpoints, mapped: POST /api/pull ({model|name, insecure, stream}) answered
// as Ollama streams it (NDJSON: "pulling manifest", "pulling <digest>" lines with total and
// completed, "verifying sha256 digest", "writing manifest", "success"; a failure as {"error"}),
// and DELETE /api/delete ({model|name}: 200 with no body, or an error in Ollama's shape).
#include <cstdint>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "protocol/errors.h"
#include "server/http/api_common.h"
#include "server/http/json_body.h"

namespace vks::http {

// What a pull reports while it downloads.
struct PullProgress {
  std::string digest;  // "sha256:<hex>", or "" when the source lists none
  std::string file;    // the file being fetched (its cache-relative name)
  uint64_t completed = 0;
  uint64_t total = 0;  // 0: not known yet
};

struct PullCall {
  std::string name;
  bool stream = true;  // Ollama's default
};

// The body of /api/pull or /api/delete: `model` (or the older `name`), required; `stream` (pull
// only, default true). `insecure` is accepted and ignored (https is always verified).
std::variant<PullCall, ApiError> read_pull_call(const JsonBody& body);

// One NDJSON line (JSON and "\n").
std::string ndjson_line(const nlohmann::json& line);
nlohmann::json ollama_pull_status(const std::string& status);
// {"status":"pulling <12 hex of the digest, or the file>","digest","total","completed"}.
nlohmann::json ollama_pull_progress(const PullProgress& p);
// The lines Ollama ends a successful pull with: verifying, writing manifest, success.
std::string ollama_pull_success_lines();

// The HTTP status and Ollama body of a failed pull or delete: not_found 404, a name that is no
// source 400, pull_failed 502, in use 409, not the server's to delete 403, shutting_down 503.
ApiError ollama_store_error(const proto::ProtocolError& error);

}  // namespace vks::http
