#pragma once
// Conversion of JSON (chat messages, tools, extra template variables) into template values.
#include <nlohmann/json.hpp>

#include "engine/chat/jinja_value.h"

namespace vks::jinja {

// Objects keep their key order; nesting deeper than max_depth is refused (vks::Error).
Value value_from_json(const nlohmann::ordered_json& json, int max_depth = 64);

}  // namespace vks::jinja
