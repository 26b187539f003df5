#pragma once
// A chat request's rendering step, shared by the msgpack `chat` request (chat_handler.cpp) and the
// HTTP chat endpoints (http_frontend_wiring.cpp): the conversation rendered with the served chat
// template (or the request's own) and tokenized into the engine request's prompt ids. Runs on
// libuv's thread pool, never on the loop thread.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/model_chat_template.h"
#include "engine/sched/engine.h"
#include "engine/tokenizer/tokenizer.h"
#include "protocol/errors.h"
#include "protocol/requests.h"

namespace vks::server {

// All the template renders of one request together (a template of its own is probed for its
// tool-call syntax, then renders the conversation): the pool thread's jinja::RenderScope. A real
// chat template renders in well under a millisecond.
inline constexpr std::chrono::milliseconds kRequestRenderTime{2'000};

// A chat's rendering kept for the later choices of an OpenAI n > 1 answer, which are the same
// conversation: they take it instead of rendering and tokenizing again (and their constraint is
// the one already compiled).
struct RenderedChat {
  std::vector<TokenId> prompt_ids;
  std::string grammar;      // the request's, or the tool-call grammar the render made
  std::string json_schema;
  std::shared_ptr<grammar::GrammarTable> compiled_constraint;
  std::shared_ptr<const chat::ModelChatTemplate> own_template;  // the request's own chat_template, if any

  // From a prepared (rendered, constraint compiled) request, before it is submitted.
  void keep(const GenerateRequest& prepared);
  // Into a later choice's request (its own id, seed and options stay).
  void give(GenerateRequest& request) const;
};

// Sets engine_request's prompt ids (and *rendered_text to the rendered prompt, when given);
// returns the error to answer with instead (a template that refuses the conversation:
// invalid_field on `messages` or `chat_template`). A request's own template comes from the served
// one's cache (request_template_cache.h) and is given back in *own_template (when given): its
// answer is to be parsed in that template's formats. Never throws.
std::optional<proto::ProtocolError> render_chat_request(const proto::ChatRequest& request,
                                                        GenerateRequest& engine_request,
                                                        const chat::ModelChatTemplate& tmpl,
                                                        const Tokenizer& tokenizer,
                                                        std::string* rendered_text = nullptr,
                                                        std::shared_ptr<const chat::ModelChatTemplate>* own_template = nullptr) noexcept;

}  // namespace vks::server
