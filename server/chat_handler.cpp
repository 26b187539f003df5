// Daemon: the `chat` request. The conversation is rendered with the chat template and tokenized on
// libuv's thread pool (OffLoop: a long conversation must not stall the socket loop, and the
// client's later requests wait so its answers keep their order; a template the client sent holds
// at most part of the pool, and its renders stop when the client leaves); the prompt ids then take
// generate's path (validation, engine submit, stream registry, topics, replay, prefix cache). The
// engine already stops at every end-of-generation token of the model (EOS, <|eot_id|>,
// <|im_end|>, ...), so a reply ends with the assistant's turn. With tools, the reply's calls
// also come as tool_call events (chat_tool_calls.h), whichever transport sent the chat (the HTTP
// front end's chats take the same preparation: chat_preparation).
#include <spdlog/spdlog.h>

#include <memory>

#include "server/chat_render.h"
#include "server/chat_tool_calls.h"
#include "server/daemon.h"

namespace vks::server {

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, proto::ChatRequest& r) {
  auto request = std::make_shared<proto::ChatRequest>(std::move(r));
  const auto arrived = std::chrono::steady_clock::now();  // a model load it waits for counts from here
  with_model_for(from, tag, request->generate.model, request->generate.keep_alive,
                 [this, from, tag, request, arrived](ModelSlot& model) {
                   render_chat(from, tag, model, std::move(*request), arrived);
                 });
}

void Daemon::render_chat(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, proto::ChatRequest r,
                         std::chrono::steady_clock::time_point arrived) {
  if (std::optional<Admission> refused = admission_check(from, r.generate.id)) {  // before rendering anything
    reply(from, proto::encode_error(refused->error, tag, refused->error_id, refused->retry_after_ms));
    return;
  }
  auto job = std::make_shared<GenerateJob>(to_generate_job(r.generate, arrived));
  auto chat = std::make_shared<const proto::ChatRequest>(std::move(r));
  ++chat_renders_;
  // A template the client sent costs what the client chooses: it may hold only part of the pool.
  const OffLoop::Cost cost = chat->chat_template ? OffLoop::Cost::kClientChosen : OffLoop::Cost::kBounded;
  prepare_off_loop(
      from, model, job, chat_preparation(chat, job, nullptr), cost, /*stop_with_client=*/!job->detached,
      still_connected(from, job->detached),
      [this, from, tag](ModelSlot& m, GenerateJob& prepared, const proto::ProtocolError* error) {
        if (error != nullptr) return reply(from, proto::encode_error(*error, tag, prepared.request.id));
        submit_generate(from, tag, m, prepared);  // prompt_ids are set now: admitted at once
      });
}

Daemon::Preparation Daemon::chat_preparation(std::shared_ptr<const proto::ChatRequest> chat, std::shared_ptr<GenerateJob> job,
                                             std::shared_ptr<std::shared_ptr<const chat::ModelChatTemplate>> own_template) {
  // On the pool thread; the loop reads what it sets once the preparation is over.
  return [chat = std::move(chat), job = std::move(job), own_template = std::move(own_template)](ServedModel& served,
                                                                                              GenerateRequest& q) {
    std::shared_ptr<const chat::ModelChatTemplate> own;
    std::optional<proto::ProtocolError> error = render_chat_request(*chat, q, *served.chat_template, *served.tokenizer, nullptr, &own);
    if (error) return error;
    // The reply is split in the format of the template that rendered it.
    if (chat->has_tools()) job->tool_calls = std::make_shared<ChatToolCalls>(own ? *own : *served.chat_template, chat->enable_thinking);
    if (own_template) *own_template = std::move(own);
    return error;
  };
}

}  // namespace vks::server
