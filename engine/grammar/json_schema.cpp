#include "engine/grammar/json_schema.h"

// This file builds grammar text by string concatenation; GCC 12 reports a false -Wrestrict on
// `"literal" + std::string` at -O3 (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wrestrict
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "engine/grammar/gbnf_text.h"
#include "engine/grammar/json_number_range.h"
#include "engine/grammar/json_pattern.h"

namespace vks::grammar {

namespace {

using json = nlohmann::ordered_json;  // properties keep their declared order

constexpr uint64_t kMaxCount = 1000;  // minItems/maxItems/minLength/maxLength we expand

// The generic JSON rules, written only when used.
const std::map<std::string, std::string> kPrimitives = {
    {"ws", "| \" \" | \"\\n\" [ ]{0,8}"},
    {"char", R"([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2})))"},
    {"string", R"("\"" char* "\"")"},
    {"integer", R"("-"? ("0" | [1-9] [0-9]{0,15}))"},
    {"number", R"("-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?)"},
    {"boolean", R"("true" | "false")"},
    {"null", R"("null")"},
    {"value", "object | array | string | number | boolean | null"},
    {"object", R"("{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}")"},
    {"array", R"("[" ws ( value ws ( "," ws value ws )* )? "]")"},
};
const std::map<std::string, std::vector<std::string>> kPrimitiveDeps = {
    {"char", {}}, {"ws", {}}, {"string", {"char"}}, {"integer", {}}, {"number", {}}, {"boolean", {}}, {"null", {}},
    {"value", {"object", "array", "string", "number", "boolean", "null"}},
    {"object", {"ws", "string", "value"}}, {"array", {"ws", "value"}},
};

const std::set<std::string> kUnsupported = {
    "allOf", "not", "if", "then", "else", "uniqueItems", "multipleOf", "minProperties", "maxProperties",
    "patternProperties", "propertyNames", "dependentRequired", "dependentSchemas", "dependencies", "contains",
    "minContains", "maxContains", "prefixItems", "additionalItems", "unevaluatedProperties", "unevaluatedItems",
    "contentEncoding", "contentMediaType", "$dynamicRef", "$recursiveRef"};

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const json& root) : root_(root) {}

  std::string run() {
    const std::string body = expr(root_, "");
    std::string out = "root ::= " + body + "\n";
    for (const auto& [name, rule_body] : rules_) out += name + " ::= " + rule_body + "\n";
    return out;
  }

 private:
  const json& root_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::set<std::string> have_;
  std::map<std::string, std::string> ref_rules_;
  int counter_ = 0;
  int depth_ = 0;

  [[noreturn]] static void fail(const std::string& path, const std::string& msg) {
    throw CompileError(0, "json_schema: at '" + (path.empty() ? std::string("#") : "#" + path) + "': " + msg);
  }

  std::string primitive(const std::string& name) {
    if (have_.insert(name).second) {
      for (const auto& dep : kPrimitiveDeps.at(name)) primitive(dep);
      rules_.push_back({name, kPrimitives.at(name)});
    }
    return name;
  }

  std::string add_rule(const std::string& body) {
    const std::string name = "s" + std::to_string(counter_++);
    rules_.push_back({name, body});
    return name;
  }

  static std::string json_literal(const json& v) { return gbnf_literal(v.dump()); }

  static bool type_matches(const json& v, const std::string& type) {
    if (type == "string") return v.is_string();
    if (type == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (type == "number") return v.is_number();
    if (type == "boolean") return v.is_boolean();
    if (type == "null") return v.is_null();
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    return false;
  }

  std::string ref(const std::string& target, const std::string& path) {
    const auto it = ref_rules_.find(target);
    if (it != ref_rules_.end()) return it->second;
    if (target != "#" && target.rfind("#/", 0) != 0) fail(path, "only local $ref (\"#...\") is supported");
    json::json_pointer ptr;
    try {
      ptr = json::json_pointer(target.substr(1));
    } catch (const json::exception&) {
      fail(path, "bad $ref '" + target + "'");
    }
    if (!root_.contains(ptr)) fail(path, "$ref '" + target + "' points nowhere");
    // Name the rule before compiling its body, so recursive schemas refer to it.
    const std::string name = "ref" + std::to_string(counter_++);
    ref_rules_[target] = name;
    const size_t slot = rules_.size();
    rules_.push_back({name, ""});
    const std::string body = expr(root_.at(ptr), target.substr(1));
    rules_[slot].second = body;
    return name;
  }

  std::string expr(const json& s, const std::string& path) {
    if (++depth_ > 64) fail(path, "schema nested too deeply");
    std::string out = expr_inner(s, path);
    --depth_;
    return out;
  }

  std::string expr_inner(const json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(path, "the schema false accepts nothing");
      return primitive("value");
    }
    if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
    for (const auto& [key, unused] : s.items()) {
      if (kUnsupported.count(key)) fail(path, "keyword '" + key + "' is not supported");
    }
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) fail(path + "/$ref", "must be a string");
      return ref(s["$ref"].get<std::string>(), path);
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const auto& x : t) {
          if (!x.is_string()) fail(path + "/type", "must be a string or a list of strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        fail(path + "/type", "must be a string or a non-empty list of strings");
      }
      for (const auto& t1 : types) {
        if (!kPrimitiveDeps.count(t1) || t1 == "value" || t1 == "char" || t1 == "ws") {
          fail(path + "/type", "unknown type '" + t1 + "'");
        }
      }
    }
    auto allowed_type = [&](const json& v) {
      if (types.empty()) return true;
      for (const auto& t : types) {
        if (type_matches(v, t)) return true;
      }
      return false;
    };
    if (s.contains("const")) {
      if (!allowed_type(s["const"])) fail(path + "/const", "the value does not have the schema's type");
      return json_literal(s["const"]);
    }
    if (s.contains("enum")) {
      const json& e = s["enum"];
      if (!e.is_array() || e.empty()) fail(path + "/enum", "must be a non-empty array");
      std::string alts;
      for (const auto& v : e) {
        if (!allowed_type(v)) continue;
        alts += (alts.empty() ? "" : " | ") + json_literal(v);
      }
      if (alts.empty()) fail(path + "/enum", "no value has the schema's type");
      return "(" + alts + ")";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const json& list = s[key];
      if (!list.is_array() || list.empty()) fail(path + "/" + key, "must be a non-empty array");
      std::string alts;
      for (size_t i = 0; i < list.size(); ++i) {
        alts += (i ? " | " : "") + expr(list[i], path + "/" + key + "/" + std::to_string(i));
      }
      return add_rule(alts);
    }
    if (types.empty()) {
      if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) {
        types.push_back("object");
      } else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) {
        types.push_back("array");
      } else if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength")) {
        types.push_back("string");
      } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
                 s.contains("exclusiveMaximum")) {
        types.push_back("number");
      } else {
        return primitive("value");
      }
    }
    std::string alts;
    for (const auto& t : types) alts += (alts.empty() ? "" : " | ") + typed(s, t, path);
    return types.size() == 1 ? alts : "(" + alts + ")";
  }

  static uint64_t count(const json& s, const char* key, uint64_t fallback, const std::string& path) {
    if (!s.contains(key)) return fallback;
    const json& v = s[key];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      fail(path + "/" + key, "must be a non-negative integer");
    }
    const auto n = v.get<uint64_t>();
    if (n > kMaxCount) fail(path + "/" + key, "values above " + std::to_string(kMaxCount) + " are not supported");
    return n;
  }

  static std::string repeat(const std::string& item, uint64_t min, uint64_t max_or_unbounded, bool unbounded) {
    if (unbounded) return item + "{" + std::to_string(min) + ",}";
    return item + "{" + std::to_string(min) + "," + std::to_string(max_or_unbounded) + "}";
  }

  std::string typed(const json& s, const std::string& type, const std::string& path) {
    if (type == "string") return string_expr(s, path);
    if (type == "integer" || type == "number") return number_expr(s, type == "integer", path);
    if (type == "boolean" || type == "null") return primitive(type);
    if (type == "array") return array_expr(s, path);
    return object_expr(s, path);
  }

  std::string string_expr(const json& s, const std::string& path) {
    if (s.contains("pattern")) {
      if (s.contains("minLength") || s.contains("maxLength")) {
        fail(path, "pattern together with minLength/maxLength is not supported");
      }
      if (!s["pattern"].is_string()) fail(path + "/pattern", "must be a string");
      try {
        return add_rule("\"\\\"\" " + json_pattern_to_gbnf(s["pattern"].get<std::string>()) + " \"\\\"\"");
      } catch (const CompileError& e) {
        fail(path + "/pattern", e.what());
      }
    }
    if (!s.contains("minLength") && !s.contains("maxLength")) return primitive("string");
    const uint64_t min = count(s, "minLength", 0, path);
    const bool unbounded = !s.contains("maxLength");
    const uint64_t max = count(s, "maxLength", 0, path);
    if (!unbounded && max < min) fail(path, "maxLength < minLength");
    primitive("char");
    return add_rule("\"\\\"\" " + repeat("char", min, max, unbounded) + " \"\\\"\"");
  }

  std::string number_expr(const json& s, bool integer, const std::string& path) {
    NumberBounds b;
    auto bound = [&](const char* key, bool exclusive, bool lower) {
      if (!s.contains(key)) return;
      const json& v = s[key];
      if (v.is_boolean()) fail(path + "/" + key, "the draft-4 boolean form is not supported");
      if (!v.is_number()) fail(path + "/" + key, "must be a number");
      const double x = v.get<double>();
      if (lower) {
        b.has_min = true;
        b.min = b.min_set ? std::max(b.min, x) : x;
        b.min_exclusive = exclusive && x >= b.min;
        b.min_set = true;
      } else {
        b.has_max = true;
        b.max = b.max_set ? std::min(b.max, x) : x;
        b.max_exclusive = exclusive && x <= b.max;
        b.max_set = true;
      }
    };
    bound("minimum", false, true);
    bound("exclusiveMinimum", true, true);
    bound("maximum", false, false);
    bound("exclusiveMaximum", true, false);
    if (!b.has_min && !b.has_max) return primitive(integer ? "integer" : "number");
    try {
      return add_rule(number_range_gbnf(b, integer));
    } catch (const CompileError& e) {
      fail(path, e.what());
    }
  }

  std::string array_expr(const json& s, const std::string& path) {
    std::string item;
    if (s.contains("items")) {
      if (s["items"].is_array()) fail(path + "/items", "tuple form (an array of schemas) is not supported");
      item = expr(s["items"], path + "/items");
    } else {
      item = primitive("value");
    }
    const uint64_t min = count(s, "minItems", 0, path);
    const bool unbounded = !s.contains("maxItems");
    const uint64_t max = count(s, "maxItems", 0, path);
    if (!unbounded && max < min) fail(path, "maxItems < minItems");
    primitive("ws");
    if (!unbounded && max == 0) return add_rule(R"("[" ws "]")");
    const std::string more = "( \",\" ws " + item + " ws )";
    std::string body;
    if (min == 0) {
      body = "( " + item + " ws " + (unbounded ? more + "*" : repeat(more, 0, max - 1, false)) + " )?";
    } else {
      body = item + " ws " + repeat(more, min - 1, max - 1, unbounded);
    }
    return add_rule("\"[\" ws " + body + " \"]\"");
  }

  std::string object_expr(const json& s, const std::string& path) {
    primitive("ws");
    std::vector<std::pair<std::string, const json*>> props;
    static const json kAny = json::object();
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) fail(path + "/properties", "must be an object");
      for (const auto& [k, v] : s["properties"].items()) props.push_back({k, &v});
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) fail(path + "/required", "must be an array of strings");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) fail(path + "/required", "must be an array of strings");
        required.insert(r.get<std::string>());
      }
      for (const auto& r : required) {
        bool known = false;
        for (const auto& p : props) known = known || p.first == r;
        if (!known) props.push_back({r, &kAny});
      }
    }
    if (props.empty()) {
      const json additional = s.contains("additionalProperties") ? s["additionalProperties"] : json(true);
      if (additional.is_boolean() && !additional.get<bool>()) return add_rule(R"("{" ws "}")");
      if (additional.is_boolean()) return primitive("object");
      const std::string value = expr(additional, path + "/additionalProperties");
      const std::string kv = add_rule("string ws \":\" ws " + value + " ws");
      primitive("string");
      return add_rule("\"{\" ws ( " + kv + " ( \",\" ws " + kv + " )* )? \"}\"");
    }
    // Properties in declaration order; optional ones may be skipped. first_i / after_i: the rest
    // from property i on, when nothing / something was written before (decides the comma).
    const size_t n = props.size();
    std::vector<std::string> kv(n);
    for (size_t i = 0; i < n; ++i) {
      const std::string value = expr(*props[i].second, path + "/properties/" + props[i].first);
      kv[i] = add_rule(json_literal(json(props[i].first)) + " ws \":\" ws " + value + " ws");
    }
    std::string after_next, first_next;  // rule names for i+1 ("" = end)
    for (size_t i = n; i-- > 0;) {
      const bool req = required.count(props[i].first) > 0;
      const std::string tail = after_next.empty() ? "" : " " + after_next;
      std::string after_body = req ? "\",\" ws " + kv[i] + tail : "( \",\" ws " + kv[i] + " )?" + tail;
      std::string first_body;
      if (req) {
        first_body = kv[i] + tail;
      } else {
        first_body = kv[i] + tail + " | " + (first_next.empty() ? "\"\"" : first_next);
      }
      after_next = add_rule(after_body);
      first_next = add_rule(first_body);
    }
    return add_rule("\"{\" ws " + first_next + " \"}\"");
  }
};

}  // namespace

std::string json_schema_to_gbnf(const json& schema) {
  try {
    return SchemaCompiler(schema).run();
  } catch (const json::exception& e) {
    throw CompileError(0, std::string("json_schema: ") + e.what());
  }
}

std::string json_schema_text_to_gbnf(std::string_view schema_json) {
  json schema;
  try {
    schema = json::parse(schema_json);
  } catch (const json::parse_error& e) {
    throw CompileError(e.byte > 0 ? e.byte - 1 : 0,
                       "json_schema: invalid JSON at offset " + std::to_string(e.byte > 0 ? e.byte - 1 : 0) + ": " + e.what());
  } catch (const json::exception& e) {  // e.g. out_of_range 406: a number literal beyond a double (1e999)
    throw CompileError(0, std::string("json_schema: invalid JSON: ") + e.what());
  }
  return json_schema_to_gbnf(schema);
}

}  // namespace vks::grammar
