// The rendering step of a chat request (chat_render.h): messages (with tool calls and tool
// results) rendered by the chat template, which receives the tools; the tool calls become the
// request's grammar (from the first token when forced, lazily under "auto").
#include "server/chat_render.h"

#include <nlohmann/json.hpp>

#include "engine/chat/chat_prompt.h"
#include "engine/chat/request_template_cache.h"
#include "engine/chat/tool_grammar.h"
#include "engine/chat/tool_prompt.h"
#include "engine/common/error.h"
#include "engine/grammar/grammar.h"

namespace vks::server {
namespace {

using ojson = nlohmann::ordered_json;

// Tools, tool traffic or reasoning given back: the conversation goes to the template as JSON
// messages (the plain path knows role and content only).
bool uses_tools(const proto::ChatRequest& request) {
  if (!request.tools.empty()) return true;
  for (const proto::ChatTurn& turn : request.messages) {
    if (!turn.tool_calls.empty() || !turn.tool_call_id.empty() || !turn.reasoning_content.empty()) return true;
  }
  return false;
}

// An error about one field of the request.
struct FieldError {
  std::string field;
  std::string message;
};

ojson parse_json_field(const std::string& text, const std::string& field) {
  ojson parsed = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) throw FieldError{field, field + " is not valid JSON"};
  return parsed;
}

// `tmpl`: the template that renders (the served one or the request's own).
std::optional<proto::ProtocolError> render_with_tools(const proto::ChatRequest& request, GenerateRequest& engine_request,
                                                      const chat::ModelChatTemplate& tmpl, const Tokenizer& tokenizer,
                                                      std::string* rendered_text) {
  const chat::ChatTemplate& chosen = tmpl.tmpl;
  const chat::ToolCallFormat& format = tmpl.tool_format;

  ojson tools = request.tools.empty() ? ojson::array() : parse_json_field(request.tools, "tools");
  std::vector<chat::ToolSpec> specs;
  try {
    specs = chat::parse_tools(tools);
  } catch (const vks::Error& e) {
    throw FieldError{"tools", e.what()};
  }
  ojson messages = ojson::array();
  for (size_t i = 0; i < request.messages.size(); ++i) {
    const proto::ChatTurn& turn = request.messages[i];
    ojson m = {{"role", turn.role}, {"content", turn.content}};
    if (!turn.tool_calls.empty()) m["tool_calls"] = parse_json_field(turn.tool_calls, "messages." + std::to_string(i) + ".tool_calls");
    if (!turn.tool_call_id.empty()) m["tool_call_id"] = turn.tool_call_id;
    if (!turn.name.empty()) m["name"] = turn.name;
    if (!turn.reasoning_content.empty()) m["reasoning_content"] = turn.reasoning_content;
    messages.push_back(std::move(m));
  }
  const bool offer = request.has_tools() && !specs.empty();
  try {
    messages = chat::prepare_tool_messages(std::move(messages), tools, offer, format);
  } catch (const vks::Error& e) {
    throw FieldError{"messages", e.what()};
  }
  ojson extra = ojson::object();
  if (offer && format.native) extra["tools"] = tools;
  if (request.enable_thinking) extra["enable_thinking"] = *request.enable_thinking;
  std::string text = chosen.render_json(messages, request.add_generation_prompt, extra);
  if (rendered_text != nullptr) *rendered_text = text;
  engine_request.prompt_ids = chat::tokenize_chat_prompt(std::move(text), tokenizer).ids;
  engine_request.prompt_ids_from_text = true;

  // A call that must happen is enforced by a grammar from the first token; under "auto" a lazy
  // grammar enforces a call once the model starts one (free text before), unless the request has
  // a grammar or JSON schema of its own (for its text answer), which then is the constraint.
  const bool forced = request.tool_choice == "required" || request.tool_choice == "function";
  if (!forced && !offer) return std::nullopt;
  const bool constrained = !engine_request.grammar.empty() || !engine_request.json_schema.empty();
  if (constrained && !forced) return std::nullopt;
  if (constrained) {
    throw FieldError{"tool_choice", "a forced tool call (tool_choice " + request.tool_choice +
                                        ") cannot be combined with a grammar or a JSON schema"};
  }
  std::vector<chat::ToolSpec> allowed;
  for (const chat::ToolSpec& spec : specs) {
    if (request.tool_choice != "function" || spec.name == request.tool_name) allowed.push_back(spec);
  }
  if (allowed.empty()) throw FieldError{"tool_name", "no tool is named '" + request.tool_name + "'"};
  const bool parallel = request.parallel_tool_calls.value_or(true);
  try {
    engine_request.grammar = forced ? chat::tool_call_gbnf(format, allowed, parallel)
                                    : chat::tool_call_lazy_gbnf(format, allowed, parallel);
  } catch (const vks::Error& e) {
    // Under "auto" a schema beyond the compiler still lets the model call: its calls are parsed
    // (and may not validate), as OpenAI accepts any schema; a forced call must be enforced.
    if (forced) throw FieldError{"tools", std::string("a tool's parameters cannot be enforced: ") + e.what()};
  }
  return std::nullopt;
}

}  // namespace

void RenderedChat::keep(const GenerateRequest& prepared) {
  prompt_ids = prepared.prompt_ids;
  grammar = prepared.grammar;
  json_schema = prepared.json_schema;
  compiled_constraint = prepared.compiled_constraint;
}

void RenderedChat::give(GenerateRequest& request) const {
  request.prompt_ids = prompt_ids;
  request.prompt_ids_from_text = true;
  request.grammar = grammar;
  request.json_schema = json_schema;
  request.compiled_constraint = compiled_constraint;
}

std::optional<proto::ProtocolError> render_chat_request(const proto::ChatRequest& request, GenerateRequest& engine_request,
                                                        const chat::ModelChatTemplate& tmpl,
                                                        const Tokenizer& tokenizer, std::string* rendered_text,
                                                        std::shared_ptr<const chat::ModelChatTemplate>* own_template) noexcept {
  try {
    std::shared_ptr<const chat::ModelChatTemplate> own;
    if (request.chat_template) own = chat::request_chat_template(*request.chat_template, tmpl);
    if (own_template != nullptr) *own_template = own;
    const chat::ModelChatTemplate& chosen = own ? *own : tmpl;
    // The JSON rendering path carries tools and template variables (enable_thinking) too.
    if (uses_tools(request) || request.enable_thinking) return render_with_tools(request, engine_request, chosen, tokenizer, rendered_text);
    std::vector<chat::ChatMessage> messages;
    messages.reserve(request.messages.size());
    for (const auto& turn : request.messages) messages.push_back({turn.role, turn.content});
    chat::ChatPrompt prompt = chat::build_chat_prompt(chosen.tmpl, messages, request.add_generation_prompt, std::nullopt, tokenizer);
    if (rendered_text != nullptr) *rendered_text = std::move(prompt.text);
    engine_request.prompt_ids = std::move(prompt.ids);
    engine_request.prompt_ids_from_text = true;
    return std::nullopt;
  } catch (const FieldError& e) {
    return proto::make_error(proto::WireError::kInvalidField, e.message, e.field);
  } catch (const jinja::TemplateError& e) {
    // A bad request template, or the model's template refusing this conversation (its own
    // raise_exception, e.g. "Conversation roles must alternate").
    return proto::make_error(proto::WireError::kInvalidField, e.what(),
                             request.chat_template ? "chat_template" : "messages");
  } catch (const vks::Error& e) {
    return proto::make_error(proto::WireError::kInvalidField, e.what(), "messages");
  } catch (const std::exception& e) {
    return proto::make_error(proto::WireError::kInternal, std::string("rendering the chat failed: ") + e.what());
  } catch (...) {
    return proto::make_error(proto::WireError::kInternal, "rendering the chat failed");
  }
}

}  // namespace vks::server
