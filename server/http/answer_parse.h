#pragma once
// A chat answer as the HTTP surfaces show it: the reasoning block first (when the served
// template thinks: engine/chat/reasoning.h), then tool calls in what remains (when tools are
// offered: engine/chat/tool_call_parser.h). Both parsers are incremental and exact, so an answer
// split into streamed pieces gives what the whole answer gives, and each surface has one code
// path for both.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "engine/chat/model_chat_template.h"
#include "engine/chat/tool_call_parser.h"
#include "server/http/api_common.h"
#include "server/http/generation.h"

namespace vks::http {

struct AnswerPiece {
  std::string reasoning;   // reasoning settled by this piece
  chat::ToolParse answer;  // the answer's text outside calls, and the calls completed

  bool empty() const { return reasoning.empty() && answer.text.empty() && answer.calls.empty(); }
};

// What `piece` settles; with `end`, also what was held back (the answer is over: call once).
void split_answer(Generation& g, std::string_view piece, bool end, AnswerPiece& out);

// The calls of a parsed piece in the order the parser settled them, for every surface that streams
// calls: a call's fragments (ToolParse::fragments, with stream_arguments), then its end, then the
// next call's. `calls_ended` (Generation::tool_calls_sent) counts the ends; each ended call gets its
// index in the answer. on_fragment(const chat::ToolCallFragment&), on_call(const chat::ToolCall&, size_t index).
template <class OnFragment, class OnCall>
void each_call_event(const chat::ToolParse& parsed, size_t& calls_ended, OnFragment&& on_fragment, OnCall&& on_call) {
  size_t next = 0;
  for (const chat::ToolCall& call : parsed.calls) {
    for (; next < parsed.fragments.size() && parsed.fragments[next].index <= calls_ended; ++next) on_fragment(parsed.fragments[next]);
    const size_t index = calls_ended++;
    on_call(call, index);
  }
  for (; next < parsed.fragments.size(); ++next) on_fragment(parsed.fragments[next]);
}

// The answer's parsers made again for a chat rendered with the request's own template `tmpl`
// (the mapping made them with the served template's formats): tool calls only if tools were
// offered, with the same argument streaming; reasoning as that template thinks.
void parse_with_template(Generation& g, const chat::ModelChatTemplate& tmpl);

// A request's thinking switch: Ollama `think`, Anthropic `thinking`, OpenAI `reasoning_effort`,
// `chat_template_kwargs.enable_thinking`, Responses `reasoning.effort`.
enum class Think { kUnset, kOn, kOff };

// Sets the wire's enable_thinking (the template's switch) when the request chose; a request that
// asks for thinking (kOn) from a model whose template does not think is refused when `strict`
// (Ollama and Anthropic do), naming `param`.
std::optional<ApiError> map_think(Think think, const ModelCatalogue& model, nlohmann::json& wire, const std::string& param,
                                  bool strict);

// The answer's reasoning parser for a request mapped to `wire` (its enable_thinking), or none when
// the template does not think: chat::answer_reasoning_parser.
std::optional<chat::ReasoningParser> reasoning_parser(const ModelCatalogue& model, const nlohmann::json& wire);

// chat_template_kwargs (llama.cpp's and vLLM's name): only enable_thinking is known.
std::optional<ApiError> read_template_kwargs(const JsonBody& body, Think& think);

}  // namespace vks::http
