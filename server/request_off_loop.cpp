// Daemon: the tokenize and detokenize requests' heavy parts run off the loop thread (OffLoop,
// libuv's thread pool): tokenizing long texts and detokenizing many ids (generations are prepared
// by preparation.cpp). Small ones stay inline (a pool round trip costs more than they do). While a
// client has such work in flight, its later requests wait (handle_request defers them), so its
// answers keep their order; a cancel of a known request takes effect at once all the same.
#include <spdlog/spdlog.h>

#include <exception>
#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include "server/daemon.h"

namespace vks::server {
namespace {

constexpr size_t kOffLoopMinIds = 1024;
// A cancel is a type, an id and a tag (at most max_tag_bytes): a payload longer than this is some
// other request, not worth parsing twice.
constexpr size_t kMaxCancelBytes = 2048;

}  // namespace

bool Daemon::defer_if_busy(const ClientRef& from, std::string& payload) {
  const std::string key = owner_key(from);
  if (!off_loop_.busy(key)) return false;
  // A cancel must not wait behind its client's work in flight, which may be the very request it
  // names (a chat whose template is still rendering): it takes effect now, and only its answer
  // waits for its turn. A cancel of an id not known yet is handled in turn (a request deferred
  // before it may bring that id).
  if (std::optional<std::string> answer = cancel_ahead(from, payload)) {
    off_loop_.defer(key, [this, from, answer = std::move(*answer)] { reply(from, answer); });
    return true;
  }
  off_loop_.defer(key, [this, from, request = std::move(payload)]() mutable { handle_request(from, request); });
  return true;
}

std::optional<std::string> Daemon::cancel_ahead(const ClientRef& from, const std::string& payload) {
  if (payload.size() > kMaxCancelBytes) return std::nullopt;  // not a cancel: parsed in its turn only
  try {
    proto::Result<proto::Request> parsed = proto::parse_request(payload, limits_);
    if (!parsed) return std::nullopt;
    const auto* cancel = std::get_if<proto::CancelRequest>(&parsed->body);
    if (cancel == nullptr) return std::nullopt;
    return cancel_known(from, parsed->tag, *cancel);
  } catch (const std::exception& e) {
    spdlog::error("{}: cancel ahead of its turn failed: {}", from.describe(), e.what());
    return std::nullopt;
  }
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

}  // namespace vks::server
