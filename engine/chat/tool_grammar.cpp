#include "engine/chat/tool_grammar.h"

// Grammar text is built by string concatenation; GCC 12 reports a false -Wrestrict on
// `"literal" + std::string` at -O3 (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include "engine/common/error.h"
#include "engine/grammar/gbnf_text.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/lazy_grammar.h"

namespace vks::chat {
namespace {

using ojson = nlohmann::ordered_json;

// Every local $ref ("#...") of a schema moved to root pointer `base` points into it again.
void rebase_refs(ojson& schema, const std::string& base) {
  if (schema.is_object()) {
    for (auto& [key, value] : schema.items()) {
      if (key == "$ref" && value.is_string() && value.get<std::string>().starts_with("#")) {
        value = "#" + base + value.get<std::string>().substr(1);
      } else {
        rebase_refs(value, base);
      }
    }
  } else if (schema.is_array()) {
    for (auto& item : schema) rebase_refs(item, base);
  }
}

// Inside a call, at most one space where JSON allows whitespace. Templates render calls with
// tojson (single spaces), and the schema grammar's layout whitespace (a newline and up to 8
// spaces, for pretty-printed documents) only gives a model room to wander: a weak or random model
// spent a 40-token budget on indentation before the call closed, and a cut call is no call.
void compact_whitespace(std::string& rules) {
  constexpr std::string_view kWs = "ws ::= ";
  size_t at = rules.starts_with(kWs) ? 0 : rules.find("\n" + std::string(kWs));
  if (at == std::string::npos) return;  // no JSON whitespace in this grammar (a call without arguments)
  if (at != 0) at += 1;
  const size_t end = rules.find('\n', at);
  rules.replace(at, end == std::string::npos ? std::string::npos : end - at, "ws ::= \" \"?");
}

}  // namespace

std::vector<ToolSpec> parse_tools(const ojson& tools) {
  if (!tools.is_array()) throw vks::Error(ErrorCode::kInvalidArgument, "tools must be an array");
  std::vector<ToolSpec> specs;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools.at(i);
    const std::string where = "tools." + std::to_string(i);
    if (!t.is_object()) throw vks::Error(ErrorCode::kInvalidArgument, where + " must be an object");
    // contains() + at(), not find(): GCC 12 reports a false -Wnull-dereference inside
    // nlohmann's const iterators here.
    if (t.contains("type") && t.at("type") != "function") {
      throw vks::Error(ErrorCode::kInvalidArgument, where + ".type must be \"function\"");
    }
    if (!t.contains("function") || !t.at("function").is_object()) {
      throw vks::Error(ErrorCode::kInvalidArgument, where + ".function must be an object");
    }
    const ojson& fn = t.at("function");
    if (!fn.contains("name") || !fn.at("name").is_string() || fn.at("name").get<std::string>().empty()) {
      throw vks::Error(ErrorCode::kInvalidArgument, where + ".function.name must be a non-empty string");
    }
    ToolSpec spec;
    spec.name = fn.at("name").get<std::string>();
    for (const ToolSpec& seen : specs) {
      if (seen.name == spec.name) throw vks::Error(ErrorCode::kInvalidArgument, where + ": two tools are named '" + spec.name + "'");
    }
    if (!fn.contains("parameters") || fn.at("parameters").is_null()) {
      spec.parameters = {{"type", "object"}};
    } else if (fn.at("parameters").is_object()) {
      spec.parameters = fn.at("parameters");
    } else {
      throw vks::Error(ErrorCode::kInvalidArgument, where + ".function.parameters must be a JSON Schema object");
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

namespace {

// The rules of the calls (start rule vkscalls): the format's markers around one call to one of
// `allowed`, or several when `parallel` and the format allows it.
std::string calls_gbnf(const ToolCallFormat& format, const std::vector<ToolSpec>& allowed, bool parallel) {
  if (allowed.empty()) throw vks::Error(ErrorCode::kInvalidArgument, "no tool to call");
  // One schema for "a call to any allowed tool": each tool's parameters under $defs (their own
  // $refs rebased there), an anyOf of {name: const, arguments: that schema}.
  ojson schema = {{"anyOf", ojson::array()}, {"$defs", ojson::object()}};
  for (size_t i = 0; i < allowed.size(); ++i) {
    const std::string def = "tool" + std::to_string(i);
    ojson parameters = allowed[i].parameters;
    rebase_refs(parameters, "/$defs/" + def);
    schema["$defs"][def] = std::move(parameters);
    ojson name = {{"const", allowed[i].name}};
    ojson args = {{"$ref", "#/$defs/" + def}};
    ojson properties = ojson::object();
    if (format.name_first) {
      properties[format.name_key] = std::move(name);
      properties[format.args_key] = std::move(args);
    } else {
      properties[format.args_key] = std::move(args);
      properties[format.name_key] = std::move(name);
    }
    schema["anyOf"].push_back({{"type", "object"},
                               {"properties", std::move(properties)},
                               {"required", {format.name_key, format.args_key}},
                               {"additionalProperties", false}});
  }
  std::string rules = grammar::json_schema_to_gbnf(schema);
  constexpr std::string_view kRoot = "root ::= ";
  if (!rules.starts_with(kRoot)) throw vks::Error(ErrorCode::kInternal, "tool grammar: unexpected schema grammar");
  rules = "vkscall ::= " + rules.substr(kRoot.size());
  compact_whitespace(rules);
  const bool several = parallel && format.parallel;
  std::string calls;
  if (format.array) {
    calls = "vkscalls ::= " + grammar::gbnf_literal(format.open) + " \"[\" vkscall " + (several ? "(\", \" vkscall)* " : "") + "\"]\"\n";
  } else if (format.open.empty()) {
    calls = "vkscalls ::= vkscall\n";  // JSON at the start of the answer: one call
  } else {
    std::string block = "vksblock ::= " + grammar::gbnf_literal(format.open) + " \"\\n\"? vkscall";
    if (!format.close.empty()) block += " \"\\n\"? " + grammar::gbnf_literal(format.close);
    calls = "vkscalls ::= vksblock" + std::string(several ? " (\"\\n\"? vksblock)*" : "") + "\n" + block + "\n";
  }
  return calls + rules;
}

}  // namespace

std::string tool_call_gbnf(const ToolCallFormat& format, const std::vector<ToolSpec>& allowed, bool parallel) {
  return "root ::= vkscalls\n" + calls_gbnf(format, allowed, parallel);
}

std::string tool_call_lazy_gbnf(const ToolCallFormat& format, const std::vector<ToolSpec>& allowed, bool parallel) {
  grammar::LazyTrigger trigger;
  if (format.open.empty()) {
    trigger.word = format.array ? "[" : "{";
    trigger.at_start = true;
  } else {
    trigger.word = format.open;
  }
  return grammar::lazy_gbnf(trigger, "vkscalls") + calls_gbnf(format, allowed, parallel);
}

}  // namespace vks::chat
