// Daemon: the `chat` request. The conversation is rendered with the chat template and tokenized on
// libuv's thread pool (a long conversation must not stall the socket loop); the prompt ids then
// take generate's path (validation, engine submit, stream registry, topics, replay, prefix cache).
// The engine already stops at every end-of-generation token of the model (EOS, <|eot_id|>,
// <|im_end|>, ...), so a reply ends at the end of the assistant's turn.
#include <spdlog/spdlog.h>

#include <exception>
#include <memory>

#include "engine/chat/chat_prompt.h"
#include "server/daemon.h"

namespace vks::server {

// One chat request in flight between the loop thread and a pool thread. The pool thread only
// reads `request`, the template and the tokenizer (immutable while the daemon serves) and writes
// `ids` / `error`; the loop thread reads them after the work completed.
struct ChatWork {
  uv_work_t req{};
  Daemon* daemon = nullptr;
  ClientRef from;
  proto::Tag tag;
  proto::ChatRequest request;
  std::shared_ptr<const chat::ModelChatTemplate> tmpl;
  const Tokenizer* tokenizer = nullptr;
  std::vector<TokenId> ids;
  std::optional<proto::ProtocolError> error;
};

namespace {

void render_and_tokenize(uv_work_t* req) {
  auto* work = static_cast<ChatWork*>(req->data);
  try {
    std::vector<chat::ChatMessage> messages;
    messages.reserve(work->request.messages.size());
    for (const auto& turn : work->request.messages) messages.push_back({turn.role, turn.content});
    const chat::ChatPrompt prompt = chat::build_chat_prompt(work->tmpl->tmpl, messages, work->request.add_generation_prompt,
                                                            work->request.chat_template, *work->tokenizer);
    work->ids = prompt.ids;
  } catch (const jinja::TemplateError& e) {
    // A bad request template, or the model's template refusing this conversation (its own
    // raise_exception, e.g. "Conversation roles must alternate").
    work->error = proto::make_error(proto::WireError::kInvalidField, e.what(),
                                    work->request.chat_template ? "chat_template" : "messages");
  } catch (const std::exception& e) {
    work->error = proto::make_error(proto::WireError::kInternal, std::string("rendering the chat failed: ") + e.what());
  } catch (...) {
    work->error = proto::make_error(proto::WireError::kInternal, "rendering the chat failed");
  }
}

}  // namespace

void Daemon::handle(const ClientRef& from, const proto::Tag& tag, proto::ChatRequest& r) {
  if (!served_.chat_template || !served_.tokenizer) {
    reply_error(from, tag, proto::WireError::kUnsupported, "this server has no chat template (it serves no model file)");
    return;
  }
  if (phase_ != Phase::kServing) {
    ++requests_rejected_;
    reply_error(from, tag, proto::WireError::kShuttingDown, "the server is shutting down; retry after it restarts");
    return;
  }
  auto work = std::make_unique<ChatWork>();
  work->req.data = work.get();
  work->daemon = this;
  work->from = from;
  work->tag = tag;
  work->request = std::move(r);
  work->tmpl = served_.chat_template;
  work->tokenizer = served_.tokenizer.get();
  const int rc = uv_queue_work(&loop_, &work->req, render_and_tokenize, &Daemon::on_chat_rendered);
  if (rc != 0) {
    reply_error(from, tag, proto::WireError::kInternal, std::string("cannot queue the chat rendering: ") + uv_strerror(rc));
    return;
  }
  work.release();  // owned by libuv until on_chat_rendered
}

void Daemon::on_chat_rendered(uv_work_t* req, int status) {
  std::unique_ptr<ChatWork> work(static_cast<ChatWork*>(req->data));
  Daemon& d = *work->daemon;
  try {
    if (status != 0) {
      d.reply_error(work->from, work->tag, proto::WireError::kInternal, "the chat rendering was cancelled");
      return;
    }
    if (work->error) {
      ++d.requests_rejected_;
      spdlog::info("{}: chat rejected: {}", work->from.describe(), work->error->message);
      d.reply(work->from, proto::encode_error(*work->error, work->tag, work->request.generate.request.id));
      return;
    }
    // The client left while its chat was being rendered: nobody would read the reply.
    if (work->from.transport == Transport::kUds && !work->request.generate.detached &&
        (!d.uds_ || d.uds_->find(work->from.conn_id) == nullptr)) {
      return;
    }
    work->request.generate.request.prompt_ids = std::move(work->ids);
    d.handle(work->from, work->tag, work->request.generate);
  } catch (const std::exception& e) {
    spdlog::error("{}: chat failed: {}", work->from.describe(), e.what());
    d.reply_error(work->from, work->tag, proto::WireError::kInternal, e.what());
  } catch (...) {
    spdlog::error("{}: chat failed with an unknown exception", work->from.describe());
  }
}

}  // namespace vks::server
