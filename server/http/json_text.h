#pragma once
// JSON as the HTTP layer sends it: one line, invalid UTF-8 replaced (bodies may quote what a client
// sent), never thrown on.
#include <nlohmann/json.hpp>

#include <string>

namespace vks::http {

std::string compact_dump(const nlohmann::json& j);

}  // namespace vks::http
