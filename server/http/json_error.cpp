#include "server/http/json_error.h"

#include <nlohmann/json.hpp>

#include "server/http/json_text.h"

namespace vks::http {

std::string_view error_type_for_status(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 501: return "not_implemented_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string openai_error_body(int status, std::string_view message, std::string_view code,
                              std::string_view param) {
  nlohmann::json error = {
      {"message", std::string(message)},
      {"type", std::string(error_type_for_status(status))},
      {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::string(param))},
      {"code", std::string(code)},
  };
  return compact_dump(nlohmann::json{{"error", std::move(error)}});
}

std::string ollama_error_body(std::string_view message) {
  return compact_dump(nlohmann::json{{"error", std::string(message)}});
}

}  // namespace vks::http
