#pragma once
// The one place where wire types (protocol/, engine-free) meet engine types: requests in, events,
// errors, model info and stats out. Only the server links this (library vks_engine_translation);
// protocol/ and the clients never see an engine header.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/model/llama_config.h"
#include "engine/sched/engine.h"
#include "engine/tokenizer/tokenizer.h"
#include "protocol/errors.h"
#include "protocol/limits.h"
#include "protocol/requests.h"
#include "protocol/responses.h"
#include "protocol/stats.h"

namespace vks::server {
class ChatToolCalls;
}

namespace vks {

// Wire generate → engine request. Absent fields get the documented defaults (max_tokens: 0 =
// until the context is full; logprobs: -1 = none at all); deadline_ms becomes an absolute
// deadline from `now`. A top_p too small for a float becomes the smallest positive float (the
// protocol accepts any p > 0). The request was validated by proto::parse_request.
GenerateRequest to_engine_request(const proto::GenerateRequest& wire,
                                  std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

// A generate as the server runs it: the engine request plus what only the server acts on.
struct GenerateJob {
  GenerateRequest request;
  bool detached = false;  // survives the submitting connection's close
  bool stream = true;     // events go to the submitting connection (else only `accepted`)
  std::chrono::steady_clock::time_point arrived{};  // when the server got it (a model load it waited for counts)
  // A chat request with tools (msgpack or HTTP): its reply's calls become tool_call events (its
  // stream entry takes it at admission; server/chat_tool_calls.h).
  std::shared_ptr<server::ChatToolCalls> tool_calls;
  int32_t max_context_tokens = 0;  // the request's own context (0 = the model's): context_bound.h
};
GenerateJob to_generate_job(const proto::GenerateRequest& wire,
                            std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

// Engine finish reason ↔ wire finish reason (same five values).
proto::FinishReason to_wire(FinishReason r);

// Engine error category → wire code (kInvalidArgument→invalid_field, kOutOfMemory→capacity_exceeded,
// kOverloaded→overloaded, kCancelled→cancelled, kDeadlineExceeded→deadline_exceeded,
// kNotFound→not_found, kUnsupported→unsupported, kDevice→device_error, others→internal).
proto::WireError wire_error_from_engine(ErrorCode code);

// The wire error for a failed Engine::submit. prompt_too_long when the engine reports a prompt
// longer than max_prompt_tokens (SubmitResult.prompt_tokens > max_prompt_tokens > 0), otherwise
// wire_error_from_engine(result.code). field: the field the engine's message starts with
// ("max_tokens: ..." → "max_tokens"; the engine's "prompt_text" is the wire's "prompt"), else empty;
// for prompt_too_long "prompt" or "prompt_ids".
proto::ProtocolError error_from_submit(const SubmitResult& result, int32_t max_prompt_tokens);

// Engine event → wire event. kFirstToken becomes a token event with first = true. with_logprobs:
// include "logprobs" (the request asked for logprobs ≥ 0).
proto::StreamEvent stream_event_from_engine(const EngineEvent& ev, int64_t seq, bool with_logprobs);
inline std::string encode_engine_event(const EngineEvent& ev, int64_t seq, bool with_logprobs) {
  return proto::encode_event(stream_event_from_engine(ev, seq, with_logprobs));
}

// tokenizer may be null (bos/eos stay -1).
proto::ModelInfo model_info_from(const LlamaConfig& config, const Tokenizer* tokenizer, std::string device);

proto::StatsSnapshot make_stats_snapshot(const EngineStats& engine, const proto::ServerStats& server);

}  // namespace vks

// ---- embed (docs/PROTOCOL.md 3.11) ----
namespace vks {

// Wire embed → engine request (texts or token ids; pooling name → Pooling; deadline from `now`).
EmbedRequest to_engine_embed(const proto::EmbedRequest& wire,
                             std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

// The wire error for a failed Engine::submit_embed: prompt_too_long when the engine names an input
// that is too long (SubmitResult.prompt_tokens > 0 on an invalid argument), else
// wire_error_from_engine; field from the message ("input.2: ..." → "input.2").
proto::ProtocolError error_from_embed_submit(const SubmitResult& result);

// The answer for an embed request's kFinished event with reason kStop.
proto::EmbedAnswer embed_answer_from_engine(const EngineEvent& finished);

// The error for an embed request that finished otherwise (cancelled, deadline, error: the kError
// event's code and message when there was one).
proto::ProtocolError embed_failure(FinishReason reason, const EngineEvent* error_event);

}  // namespace vks
