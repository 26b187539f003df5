#include "server/http/json_text.h"

namespace vks::http {

std::string compact_dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace vks::http
