// Daemon: the `chat` request. The conversation is rendered with the chat template and tokenized on
// libuv's thread pool (OffLoop: a long conversation must not stall the socket loop, and the
// client's later requests wait so its answers keep their order; a template the client sent holds
// at most part of the pool, and its renders stop when the client leaves); the prompt ids then take
// generate's path (validation, engine submit, stream registry, topics, replay, prefix cache). The
// engine already stops at every end-of-generation token of the model (EOS, <|eot_id|>,
// <|im_end|>, ...), so a reply ends with the assistant's turn.
#include <spdlog/spdlog.h>

#include <atomic>
#include <exception>
#include <memory>

#include "engine/chat/jinja_budget.h"
#include "server/chat_render.h"
#include "server/daemon.h"

namespace vks::server {
namespace {

// What the pool thread produces: the prompt ids, or the error to answer with.
struct ChatRendering {
  proto::ChatRequest request;
  GenerateJob job;  // request.generate for the engine; the rendering fills its prompt ids
  std::optional<proto::ProtocolError> error;
};

// Renders, tokenizes and compiles the request's grammar or schema (a big one takes far longer than
// rendering), all on the pool thread.
void render_and_tokenize(ChatRendering& work, const chat::ModelChatTemplate& tmpl, const Tokenizer& tokenizer,
                         Engine& engine, int32_t max_prompt_tokens) {
  work.error = render_chat_request(work.request, work.job.request, tmpl, tokenizer);
  if (work.error) return;
  std::string compile_error;
  if (!engine.prepare_constraint(work.job.request, compile_error)) {  // answered as Engine::submit would
    SubmitResult rejected;
    rejected.code = ErrorCode::kInvalidArgument;
    rejected.message = compile_error;
    work.error = error_from_submit(rejected, max_prompt_tokens);
  }
}

}  // namespace

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
  auto work = std::make_shared<ChatRendering>();
  work->job = to_generate_job(r.generate, arrived);
  work->request = std::move(r);
  std::shared_ptr<ServedModel> served = model.served;  // kept loaded while the work runs
  ModelSlot* slot = &model;  // stays: a model is never unloaded while its ServedModel is held
  const int32_t max_prompt_tokens = limits_.max_prompt_tokens;
  // Stopped when its connection closes, unless the request outlives the connection (detached).
  auto cancel = work->job.detached ? nullptr : std::make_shared<std::atomic<bool>>(false);
  // A template the client sent costs what the client chooses: it may hold only part of the pool.
  const OffLoop::Cost cost = work->request.chat_template ? OffLoop::Cost::kClientChosen : OffLoop::Cost::kBounded;
  off_loop_.run(
      &loop_, owner_key(from),
      [work, served, max_prompt_tokens, cancel] {
        jinja::RenderScope renders(kRequestRenderTime, cancel.get());
        render_and_tokenize(*work, *served->chat_template, *served->tokenizer, *served->engine, max_prompt_tokens);
      },
      [this, from, tag, work, served, slot](std::exception_ptr error) {
        if (!handles_open_) return;  // shut down meanwhile: every socket is closed
        GenerateJob& generate = work->job;
        if (error || work->error) {
          ++requests_rejected_;
          const proto::ProtocolError e =
              work->error ? *work->error : proto::make_error(proto::WireError::kInternal, "rendering the chat failed");
          spdlog::info("{}: chat rejected: {}", from.describe(), e.message);
          reply(from, proto::encode_error(e, tag, generate.request.id));
          return;
        }
        // A connection that closed meanwhile gets nothing started, unless the request outlives it.
        if (from.transport == Transport::kUds && !generate.detached && uds_ && uds_->find(from.conn_id) == nullptr) {
          spdlog::info("{}: closed while its chat was rendered; request dropped", from.describe());
          return;
        }
        submit_generate(from, tag, *slot, generate);  // prompt_ids are set now: handled inline
      },
      cancel, cost);
}

}  // namespace vks::server
