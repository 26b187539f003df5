#include "engine/chat/tool_format.h"

#include <optional>
#include <string_view>

#include "engine/chat/json_scanner.h"

namespace vks::chat {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kProbeName = "vks_probe_fn";
constexpr std::string_view kProbeArg = "vks_probe_arg";
constexpr std::string_view kProbeText = "vks_probe_text";
constexpr std::string_view kProbeQuestion = "vks_probe_question";
constexpr size_t kMaxMarkerBytes = 64;

ojson probe_tools() {
  ojson parameters = {{"type", "object"},
                      {"properties", {{std::string(kProbeArg), {{"type", "string"}}}}},
                      {"required", {std::string(kProbeArg)}}};
  return ojson::array({{{"type", "function"},
                        {"function", {{"name", std::string(kProbeName)}, {"description", "probe"}, {"parameters", parameters}}}}});
}

ojson probe_call(int i) {
  return {{"id", "call_vksprobe" + std::to_string(i)},
          {"type", "function"},
          {"function", {{"name", std::string(kProbeName)}, {"arguments", {{std::string(kProbeArg), "vks_probe_value"}}}}}};
}

ojson conversation(ojson assistant) {
  return ojson::array({{{"role", "user"}, {"content", std::string(kProbeQuestion)}}, std::move(assistant)});
}

ojson assistant_with_calls(int calls) {
  ojson list = ojson::array();
  for (int i = 0; i < calls; ++i) list.push_back(probe_call(i));
  return {{"role", "assistant"}, {"content", ""}, {"tool_calls", std::move(list)}};
}

std::optional<std::string> render(const ChatTemplate& tmpl, const ojson& messages) {
  jinja::RenderLimits limits;
  limits.max_steps = 1'000'000;
  limits.max_output_bytes = 1 << 20;
  try {
    return tmpl.render_json(messages, false, {{"tools", probe_tools()}}, limits);
  } catch (...) {  // a template that refuses the probe (raise_exception) has no usable tool syntax
    return std::nullopt;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Where the probe call sits in a rendering: the JSON object (or the array holding it) and its keys.
struct FoundCall {
  size_t start = 0, end = 0;  // [start, end): the object, or the array when `array`
  bool array = false;
  size_t elements = 1;        // objects in the array
  std::string name_key, args_key;
  bool name_first = true;
};

std::optional<size_t> value_end(std::string_view text, size_t start) {
  JsonScanner scanner;
  for (size_t i = start; i < text.size(); ++i) {
    if (scanner.step(text[i])) return i + 1;
  }
  return std::nullopt;
}

bool holds_probe_args(const ojson& v) {
  if (v.is_object()) return v.contains(std::string(kProbeArg));
  if (v.is_string()) return v.get<std::string>().find(kProbeArg) != std::string::npos;
  return false;
}

// The innermost JSON object around the first quoted probe name after `from` that names the probe
// function under one key and holds its arguments under another.
std::optional<FoundCall> find_call(std::string_view text, size_t from) {
  const std::string quoted = "\"" + std::string(kProbeName) + "\"";
  const size_t at = text.find(quoted, from);
  if (at == std::string_view::npos) return std::nullopt;
  for (size_t p = at; p-- > from;) {
    if (text[p] != '{') continue;
    const std::optional<size_t> end = value_end(text, p);
    if (!end || *end <= at) continue;
    const ojson object = ojson::parse(text.substr(p, *end - p), nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded() || !object.is_object()) continue;
    FoundCall f;
    for (const auto& [key, value] : object.items()) {
      if (f.name_key.empty() && value.is_string() && value.get<std::string>() == kProbeName) {
        f.name_key = key;
        if (!f.args_key.empty()) f.name_first = false;
      } else if (f.args_key.empty() && holds_probe_args(value)) {
        f.args_key = key;
      }
    }
    if (f.name_key.empty() || f.args_key.empty()) continue;
    f.start = p;
    f.end = *end;
    size_t before = p;
    while (before > from && (text[before - 1] == ' ' || text[before - 1] == '\n')) --before;
    if (before > from && text[before - 1] == '[') {  // the calls form one array
      const std::optional<size_t> array_end = value_end(text, before - 1);
      const ojson array = array_end ? ojson::parse(text.substr(before - 1, *array_end - before + 1), nullptr, false) : ojson();
      if (array.is_array()) {
        f.array = true;
        f.start = before - 1;
        f.end = *array_end;
        f.elements = array.size();
      }
    }
    return f;
  }
  return std::nullopt;
}

size_t common_prefix(std::string_view a, std::string_view b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

ToolCallFormat generic_tool_format() {
  ToolCallFormat f;
  f.open = "<tool_call>";
  f.close = "</tool_call>";
  return f;
}

ToolCallFormat detect_tool_format(const ChatTemplate& tmpl) {
  const std::optional<std::string> one = render(tmpl, conversation(assistant_with_calls(1)));
  const std::optional<std::string> text =
      render(tmpl, conversation({{"role", "assistant"}, {"content", std::string(kProbeText)}}));
  if (!one || !text) return generic_tool_format();
  const size_t question = one->find(kProbeQuestion);
  if (question == std::string::npos) return generic_tool_format();
  const std::optional<FoundCall> call = find_call(*one, question);
  if (!call) return generic_tool_format();
  // The assistant's own text starts where the two renderings part.
  const size_t turn_start = std::min(common_prefix(*one, *text), call->start);
  if (turn_start < question) return generic_tool_format();
  ToolCallFormat f;
  f.native = true;
  f.open = std::string(trim(std::string_view(*one).substr(turn_start, call->start - turn_start)));
  f.array = call->array;
  f.name_key = call->name_key;
  f.args_key = call->args_key;
  f.name_first = call->name_first;
  if (f.open.size() > kMaxMarkerBytes || f.open.find(kProbeQuestion) != std::string::npos) return generic_tool_format();

  // Two calls in one turn: between them lies `close`, a separator and `open` again.
  const std::optional<std::string> two = render(tmpl, conversation(assistant_with_calls(2)));
  std::optional<FoundCall> first, second;
  if (two) first = find_call(*two, two->find(kProbeQuestion));
  if (first && !first->array) second = find_call(*two, first->end);
  if (first && first->array) {
    f.parallel = first->elements >= 2;
  } else if (second) {
    const std::string_view between = trim(std::string_view(*two).substr(first->end, second->start - first->end));
    if (!f.open.empty() && between.size() >= f.open.size() && between.ends_with(f.open)) {
      f.close = std::string(trim(between.substr(0, between.size() - f.open.size())));
      f.parallel = true;
    } else {
      f.parallel = false;
    }
  } else {
    f.parallel = false;
  }
  if (f.close.empty() && !f.array) {  // one call only: an XML-like closing tag right after it
    const std::string_view after = trim(std::string_view(*one).substr(call->end));
    if (after.starts_with("</")) {
      const size_t gt = after.find('>');
      if (gt != std::string_view::npos) f.close = std::string(after.substr(0, gt + 1));
    }
  }
  if (f.close.size() > kMaxMarkerBytes) f.close.clear();
  return f;
}

}  // namespace vks::chat
