#include "server/http/answer_parse.h"

#include <utility>

namespace vks::http {

void split_answer(Generation& g, std::string_view piece, bool end, AnswerPiece& out) {
  std::string content_storage;
  std::string_view content = piece;
  if (g.reasoning) {
    chat::ReasoningSplit split;
    g.reasoning->feed(piece, split);
    if (end) g.reasoning->finish(split);
    out.reasoning += split.reasoning;
    content_storage = std::move(split.content);
    content = content_storage;
  }
  if (g.tools) {
    g.tools->feed(content, out.answer);
    if (end) g.tools->finish(out.answer);
  } else {
    out.answer.text.append(content);
  }
}

void parse_with_template(Generation& g, const chat::ModelChatTemplate& tmpl) {
  if (g.tools) {
    const bool streams = g.tools->streams_arguments();
    g.tools.emplace(tmpl.tool_format);
    g.tools->stream_arguments(streams);
  }
  g.reasoning = chat::answer_reasoning_parser(tmpl.reasoning, g.enable_thinking);
  g.reasoning_counter = g.reasoning;
}

std::optional<ApiError> map_think(Think think, const ModelCatalogue& model, nlohmann::json& wire, const std::string& param,
                                  bool strict) {
  if (think == Think::kUnset) return std::nullopt;
  if (!model.reasoning.thinks()) {
    if (strict && think == Think::kOn) {
      return bad_field("the model '" + model.id + "' does not support thinking (its chat template has no <think> block)", param,
                       "thinking_not_supported");
    }
    return std::nullopt;  // nothing to switch off
  }
  wire["enable_thinking"] = think == Think::kOn;
  return std::nullopt;
}

std::optional<chat::ReasoningParser> reasoning_parser(const ModelCatalogue& model, const nlohmann::json& wire) {
  std::optional<bool> enable_thinking;
  if (const auto it = wire.find("enable_thinking"); it != wire.end() && it->is_boolean()) enable_thinking = it->get<bool>();
  return chat::answer_reasoning_parser(model.reasoning, enable_thinking);
}

std::optional<ApiError> read_template_kwargs(const JsonBody& body, Think& think) {
  const auto it = body.find("chat_template_kwargs");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return bad_field("chat_template_kwargs must be an object", "chat_template_kwargs");
  for (const auto& [key, value] : it->items()) {
    if (key != "enable_thinking") {
      return bad_field("chat_template_kwargs." + key + " is not supported (only enable_thinking)", "chat_template_kwargs." + key);
    }
    if (!value.is_boolean()) {
      return bad_field("chat_template_kwargs.enable_thinking must be a boolean", "chat_template_kwargs.enable_thinking");
    }
    think = value.get<bool>() ? Think::kOn : Think::kOff;
  }
  return std::nullopt;
}

}  // namespace vks::http
