// Daemon: the request handlers' heavy parts run off the loop thread (OffLoop, libuv's thread pool):
// tokenizing long texts (tokenize requests and generate prompts), compiling grammars and JSON
// schemas, and detokenizing many ids. Small
// ones stay inline (a pool round trip costs more than they do). While a client has such work in
// flight, its later requests wait (handle_request defers them), so its answers keep their order.
#include <spdlog/spdlog.h>

#include <exception>
#include <memory>
#include <utility>

#include "server/daemon.h"

namespace vks::server {
namespace {

constexpr size_t kOffLoopMinIds = 1024;

}  // namespace

bool Daemon::defer_if_busy(const ClientRef& from, std::string& payload) {
  const std::string key = owner_key(from);
  if (!off_loop_.busy(key)) return false;
  off_loop_.defer(key, [this, from, request = std::move(payload)]() mutable { handle_request(from, request); });
  return true;
}

bool Daemon::tokenize_off_loop(const ClientRef& from, const proto::Tag& tag, ModelSlot& model,
                               const proto::TokenizeRequest& r) {
  if (r.text.size() < kOffLoopMinTextBytes) return false;
  auto ids = std::make_shared<std::vector<TokenId>>();
  std::shared_ptr<ServedModel> served = model.served;  // kept loaded while the work runs
  off_loop_.run(
      &loop_, owner_key(from),
      [served, ids, text = r.text, add_bos = r.add_bos, parse_special = r.parse_special] {
        const Tokenizer& tok = *served->tokenizer;
        *ids = tok.encode(text, add_bos.value_or(tok.add_bos_default()), parse_special);
      },
      [this, from, tag, ids](std::exception_ptr error) {
        if (!handles_open_) return;  // shut down meanwhile: every socket is closed
        if (error) {
          reply_error(from, tag, proto::WireError::kInternal, "tokenize failed: " + what_of(error));
          return;
        }
        proto::TokenizeAnswer a;
        a.ids = std::move(*ids);
        reply(from, proto::encode_answer(a, tag));
      });
  return true;
}

bool Daemon::detokenize_off_loop(const ClientRef& from, const proto::Tag& tag, ModelSlot& model,
                                 const proto::DetokenizeRequest& r) {
  if (r.ids.size() < kOffLoopMinIds) return false;  // the caller has checked every id
  auto text = std::make_shared<std::string>();
  std::shared_ptr<ServedModel> served = model.served;  // kept loaded while the work runs
  off_loop_.run(
      &loop_, owner_key(from), [served, text, ids = r.ids] { *text = served->tokenizer->decode(ids); },
      [this, from, tag, text](std::exception_ptr error) {
        if (!handles_open_) return;
        if (error) {
          reply_error(from, tag, proto::WireError::kInternal, "detokenize failed: " + what_of(error));
          return;
        }
        proto::DetokenizeAnswer a;
        a.text = std::move(*text);
        reply(from, proto::encode_answer(a, tag));
      });
  return true;
}

bool Daemon::generate_off_loop(const ClientRef& from, const proto::Tag& tag, ModelSlot& model, GenerateJob& r) {
  GenerateRequest& req = r.request;
  const bool long_text = req.prompt_ids.empty() && req.prompt_text.size() >= kOffLoopMinTextBytes;
  // A grammar or schema compiles here too: a big one takes far longer than tokenizing.
  const bool constrained = (!req.grammar.empty() || !req.json_schema.empty()) && !req.compiled_constraint;
  if (!long_text && !constrained) return false;
  auto message = std::make_shared<GenerateJob>(std::move(r));
  auto compile_error = std::make_shared<std::string>();
  std::shared_ptr<ServedModel> served = model.served;  // kept loaded while the work runs
  ModelSlot* slot = &model;  // stays: a model is never unloaded while its ServedModel is held
  off_loop_.run(
      &loop_, owner_key(from),
      [served, message, compile_error] {
        GenerateRequest& q = message->request;
        const Tokenizer& tok = *served->tokenizer;
        if (q.prompt_ids.empty() && !q.prompt_text.empty()) {
          q.prompt_ids = tok.encode(q.prompt_text, q.add_bos.value_or(tok.add_bos_default()));
          q.prompt_ids_from_text = true;
        }
        served->engine->prepare_constraint(q, *compile_error);  // thread-safe; submit() reuses the result
      },
      [this, from, tag, message, compile_error, served, slot](std::exception_ptr error) {
        if (!handles_open_) return;
        if (error) {
          ++requests_rejected_;
          reply_error(from, tag, proto::WireError::kInternal, "preparing the request failed: " + what_of(error),
                      "prompt", message->request.id);
          return;
        }
        if (!compile_error->empty()) {  // answered exactly as Engine::submit would have
          ++requests_rejected_;
          SubmitResult rejected;
          rejected.code = ErrorCode::kInvalidArgument;
          rejected.message = *compile_error;
          spdlog::info("{}: generate rejected: {}", from.describe(), rejected.message);
          reply(from, proto::encode_error(error_from_submit(rejected, limits_.max_prompt_tokens), tag,
                                          message->request.id));
          return;
        }
        // A connection that closed meanwhile gets nothing started, unless the request outlives it.
        if (from.transport == Transport::kUds && !message->detached && uds_ && uds_->find(from.conn_id) == nullptr) {
          spdlog::info("{}: closed while its request was prepared; request dropped", from.describe());
          return;
        }
        if (message->request.prompt_ids.empty()) message->request.prompt_ids_from_text = false;
        submit_generate(from, tag, *slot, *message);  // prompt_ids and the compiled constraint are set now: handled inline
      });
  return true;
}

}  // namespace vks::server
