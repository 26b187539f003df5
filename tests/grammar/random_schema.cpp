#include "tests/grammar/random_schema.h"

#include <string>
#include <vector>

namespace vks::test {

namespace {

using nlohmann::json;

int pick(std::mt19937& rng, int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); }

json primitive(std::mt19937& rng) {
  static const std::vector<std::string> patterns = {"^[a-z]{1,6}$", "^\\d{3}-\\d{2}$", "^(yes|no|maybe)$",
                                                    "^[A-Z][a-z]*$", "^x+y?$", "^[^\\s]{2,4}$"};
  static const std::vector<std::string> words = {"red", "green", "blue", "cat", "dog", "a \"quoted\" word"};
  switch (pick(rng, 11)) {
    case 0: {
      json s = {{"type", "string"}, {"maxLength", pick(rng, 9)}};
      if (pick(rng, 2)) s["minLength"] = pick(rng, 1 + s["maxLength"].get<int>());
      return s;
    }
    case 1: return {{"type", "string"}, {"pattern", patterns[static_cast<size_t>(pick(rng, static_cast<int>(patterns.size())))]}};
    case 2: {
      json e = json::array();
      for (int i = 0, n = 1 + pick(rng, 4); i < n; ++i) e.push_back(words[static_cast<size_t>(pick(rng, 6))]);
      if (pick(rng, 3) == 0) e.push_back(pick(rng, 50));
      return {{"enum", e}};
    }
    case 3: {
      json s = {{"type", "integer"}};
      if (pick(rng, 2)) s["minimum"] = pick(rng, 200) - 100;
      if (pick(rng, 2)) s["maximum"] = (s.contains("minimum") ? s["minimum"].get<int>() : 0) + pick(rng, 1000);
      if (pick(rng, 4) == 0) s["exclusiveMaximum"] = (s.contains("maximum") ? s["maximum"].get<int>() : 5) + 1;
      return s;
    }
    case 4: {
      json s = {{"type", "number"}};
      if (pick(rng, 2)) {
        s["minimum"] = pick(rng, 10);
        s["maximum"] = 10 + pick(rng, 100);
      }
      return s;
    }
    case 5: return {{"type", "boolean"}};
    case 6: return {{"type", "null"}};
    case 7: return {{"const", pick(rng, 2) ? json("fixed") : json(pick(rng, 9))}};
    case 8: return {{"type", json::array({"string", "null"})}, {"maxLength", 5}};
    case 9: return {{"type", "integer"}, {"minimum", 0}, {"maximum", 9}};
    default: return {{"type", "string"}, {"maxLength", 3 + pick(rng, 10)}};
  }
}

}  // namespace

json random_schema(std::mt19937& rng, int depth) {
  const int kind = depth >= 3 ? 0 : pick(rng, depth == 0 ? 4 : 6);
  if (depth == 0 && kind < 3) {
    // Root: an object most of the time.
  } else if (kind == 0 || kind >= 4) {
    return primitive(rng);
  }
  if (kind == 3 && depth > 0) {
    return {{"anyOf", json::array({random_schema(rng, depth + 1), random_schema(rng, depth + 1)})}};
  }
  if (kind == 2 && depth > 0) {
    json a = {{"type", "array"}, {"items", random_schema(rng, depth + 1)}};
    const int min = pick(rng, 3);
    if (min) a["minItems"] = min;
    a["maxItems"] = min + pick(rng, 3);
    return a;
  }
  if (kind == 3) {  // root array
    return {{"type", "array"}, {"items", random_schema(rng, 1)}, {"maxItems", 1 + pick(rng, 3)}};
  }
  json props = json::object();
  json required = json::array();
  static const std::vector<std::string> names = {"name", "id", "age", "tags", "color", "when", "x", "nested item"};
  const int n = 1 + pick(rng, 4);
  for (int i = 0; i < n; ++i) {
    const std::string key = names[static_cast<size_t>(pick(rng, static_cast<int>(names.size())))];
    if (props.contains(key)) continue;
    props[key] = random_schema(rng, depth + 1);
    if (pick(rng, 3) != 0) required.push_back(key);
  }
  json o = {{"type", "object"}, {"properties", props}};
  if (!required.empty()) o["required"] = required;
  if (pick(rng, 2)) o["additionalProperties"] = false;
  return o;
}

}  // namespace vks::test
