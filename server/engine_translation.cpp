#include "server/engine_translation.h"

#include <algorithm>
#include <limits>

#include "protocol/param_ranges.h"

namespace vks {

using proto::make_error;
using proto::ProtocolError;
using proto::StreamEvent;
using proto::StreamEventType;
using proto::WireError;

GenerateRequest to_engine_request(const proto::GenerateRequest& w,
                                  std::chrono::steady_clock::time_point now) {
  GenerateRequest q;
  q.id = w.id;
  q.prompt_text = w.prompt;
  q.prompt_ids = w.prompt_ids;
  q.add_bos = w.add_bos;
  q.stop.max_tokens = w.max_tokens.value_or(0);  // 0 = unset: until the context is full
  q.stop.min_tokens = w.min_tokens.value_or(q.stop.min_tokens);
  q.stop.ignore_eos = w.ignore_eos.value_or(q.stop.ignore_eos);
  q.stop.stop_token_ids = w.stop_token_ids;
  q.stop.stop_strings = w.stop;
  SamplingParams& s = q.sampling;
  const auto f = [](const std::optional<double>& v, float fallback) {
    return v ? static_cast<float>(*v) : fallback;
  };
  s.temperature = f(w.temperature, s.temperature);
  s.top_k = w.top_k.value_or(s.top_k);
  s.top_p = f(w.top_p, s.top_p);
  // Any p > 0 is valid on the wire; one below float's range must not turn into the invalid 0.
  if (w.top_p && *w.top_p > 0 && !(s.top_p > 0)) s.top_p = std::numeric_limits<float>::denorm_min();
  s.min_p = f(w.min_p, s.min_p);
  s.repetition_penalty = f(w.repetition_penalty, s.repetition_penalty);
  if (w.repetition_penalty && *w.repetition_penalty > 0 && !(s.repetition_penalty > 0))
    s.repetition_penalty = std::numeric_limits<float>::denorm_min();
  s.presence_penalty = f(w.presence_penalty, s.presence_penalty);
  s.frequency_penalty = f(w.frequency_penalty, s.frequency_penalty);
  s.penalty_last_n = w.penalty_last_n.value_or(s.penalty_last_n);
  s.logit_bias.clear();
  s.logit_bias.reserve(w.logit_bias.size());
  for (const auto& [id, bias] : w.logit_bias) s.logit_bias.emplace_back(id, static_cast<float>(bias));
  s.seed = w.seed;
  q.logprobs = w.logprobs.value_or(-1);
  q.priority = w.priority.value_or(q.priority);
  q.speculative = w.speculative;
  if (w.deadline_ms) q.deadline = now + std::chrono::milliseconds(*w.deadline_ms);
  q.grammar = w.grammar;
  q.json_schema = w.json_schema;
  return q;
}

GenerateJob to_generate_job(const proto::GenerateRequest& wire,
                            std::chrono::steady_clock::time_point now) {
  GenerateJob job;
  job.request = to_engine_request(wire, now);
  job.detached = wire.is_detached();
  job.stream = wire.is_streamed();
  job.arrived = now;
  job.max_context_tokens = wire.max_context_tokens.value_or(0);
  return job;
}

proto::FinishReason to_wire(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return proto::FinishReason::kStop;
    case FinishReason::kLength: return proto::FinishReason::kLength;
    case FinishReason::kCancelled: return proto::FinishReason::kCancelled;
    case FinishReason::kDeadline: return proto::FinishReason::kDeadline;
    case FinishReason::kError: return proto::FinishReason::kError;
  }
  return proto::FinishReason::kError;
}

WireError wire_error_from_engine(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return WireError::kInvalidField;
    case ErrorCode::kNotFound: return WireError::kNotFound;
    case ErrorCode::kUnsupported: return WireError::kUnsupported;
    case ErrorCode::kOutOfMemory: return WireError::kCapacityExceeded;
    case ErrorCode::kOverloaded: return WireError::kOverloaded;
    case ErrorCode::kCancelled: return WireError::kCancelled;
    case ErrorCode::kDeadlineExceeded: return WireError::kDeadlineExceeded;
    case ErrorCode::kDevice: return WireError::kDeviceError;
    case ErrorCode::kCorrupt:
    case ErrorCode::kIo:
    case ErrorCode::kInternal: return WireError::kInternal;
  }
  return WireError::kInternal;
}

namespace {

// The engine starts field errors with the field name ("max_tokens: ..."); its name for the text
// prompt is prompt_text, the wire's is prompt.
std::string field_from_message(std::string_view message) {
  size_t n = 0;
  while (n < message.size() && n < 64) {
    const char c = message[n];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.')) break;
    ++n;
  }
  if (n == 0 || n >= message.size() || message[n] != ':') return {};
  const std::string field(message.substr(0, n));
  return field == "prompt_text" ? "prompt" : field;
}

}  // namespace

ProtocolError error_from_submit(const SubmitResult& result, int32_t max_prompt_tokens) {
  // Only a rejected field or a request too big for the cache names one ("max_tokens: ..."); an
  // overloaded or shutting-down engine does not (issue 15: `overloaded` carried field "overloaded").
  const bool names_field = result.code == ErrorCode::kInvalidArgument || result.code == ErrorCode::kOutOfMemory;
  std::string field = names_field ? field_from_message(result.message) : std::string();
  if (result.code == ErrorCode::kInvalidArgument && max_prompt_tokens > 0 &&
      result.prompt_tokens > max_prompt_tokens) {
    return make_error(WireError::kPromptTooLong,
                      result.message.empty()
                          ? "prompt of " + std::to_string(result.prompt_tokens) + " tokens exceeds max_prompt_tokens " +
                                std::to_string(max_prompt_tokens)
                          : result.message,
                      field == "prompt_ids" ? field : "prompt");
  }
  std::string message = result.message.empty() ? "request rejected by the engine" : result.message;
  return make_error(wire_error_from_engine(result.code), std::move(message), std::move(field));
}


namespace {

proto::GeneratedToken to_wire(const GeneratedToken& t) {
  proto::GeneratedToken out;
  out.id = t.id;
  out.logprob = t.logprob;
  out.top.reserve(t.top.size());
  for (const TokenLogprob& a : t.top) out.top.push_back({a.id, a.logprob});
  return out;
}

}  // namespace

proto::StreamEvent stream_event_from_engine(const EngineEvent& ev, int64_t seq, bool with_logprobs) {
  StreamEvent out;
  out.id = ev.request_id;
  out.seq = seq;
  switch (ev.type) {
    case EventType::kQueued:
      out.type = StreamEventType::kQueued;
      out.queue_position = ev.queue_position;
      break;
    case EventType::kScheduled: out.type = StreamEventType::kScheduled; break;
    case EventType::kPreempted: out.type = StreamEventType::kPreempted; break;
    case EventType::kFirstToken:
    case EventType::kToken:
      out.type = StreamEventType::kToken;
      out.first = ev.type == EventType::kFirstToken;
      out.ids.reserve(ev.tokens.size());
      for (const GeneratedToken& t : ev.tokens) out.ids.push_back(t.id);
      out.text = ev.text;
      if (with_logprobs) {
        out.logprobs.reserve(ev.tokens.size());
        for (const GeneratedToken& t : ev.tokens) out.logprobs.push_back(to_wire(t));
      }
      break;
    case EventType::kFinished:
      out.type = StreamEventType::kFinished;
      out.reason = to_wire(ev.reason);
      out.usage = {ev.usage.prompt_tokens, ev.usage.cached_tokens, ev.usage.generated_tokens};
      out.timings = {ev.timings.queue_ms, ev.timings.ttft_ms, ev.timings.total_ms, ev.timings.draft_tokens,
                     ev.timings.accepted_tokens};
      break;
    case EventType::kError:
      out.type = StreamEventType::kError;
      out.error_code = wire_error_from_engine(ev.error_code);
      out.error_message = ev.error_message;
      break;
    case EventType::kProgress:
      out.type = StreamEventType::kProgress;
      out.seq = -1;
      out.usage.prompt_tokens = ev.usage.prompt_tokens;
      out.usage.cached_tokens = ev.usage.cached_tokens;
      out.prompt_tokens_done = ev.prompt_tokens_done;
      break;
  }
  return out;
}


proto::ModelInfo model_info_from(const LlamaConfig& c, const Tokenizer* tokenizer, std::string device) {
  proto::ModelInfo m;
  m.name = c.name;
  m.architecture = c.architecture;
  m.vocab_size = static_cast<int32_t>(c.vocab_size);
  m.context_length = static_cast<int32_t>(c.context_length);
  m.dim = static_cast<int32_t>(c.dim);
  m.n_layers = static_cast<int32_t>(c.n_layers);
  m.n_heads = static_cast<int32_t>(c.n_heads);
  m.n_kv_heads = static_cast<int32_t>(c.n_kv_heads);
  m.head_dim = static_cast<int32_t>(c.head_dim);
  m.hidden_dim = static_cast<int32_t>(c.hidden_dim);
  const ParameterCounts params = count_parameters(c);
  m.parameters = static_cast<int64_t>(params.total);
  m.active_parameters = static_cast<int64_t>(params.active);
  m.n_experts = static_cast<int32_t>(c.n_experts);
  m.n_experts_used = static_cast<int32_t>(c.n_experts_used);
  m.expert_hidden_dim = static_cast<int32_t>(c.expert_hidden_dim);
  if (tokenizer) {
    m.bos = tokenizer->bos();
    m.eos = tokenizer->eos();
    m.add_bos = tokenizer->add_bos_default();
  }
  m.device = std::move(device);
  return m;
}


proto::StatsSnapshot make_stats_snapshot(const EngineStats& e, const proto::ServerStats& server) {
  proto::StatsSnapshot s;
  s.waiting = e.waiting;
  s.running = e.running;
  s.kv_blocks_total = e.kv_blocks_total;
  s.kv_bytes_per_token = e.kv_bytes_per_token;
  s.cpu_expert_layers = e.cpu_expert_layers;
  s.kv_blocks_used = e.kv_blocks_used;
  s.kv_usage = e.kv_blocks_total > 0 ? static_cast<double>(e.kv_blocks_used) / e.kv_blocks_total : 0.0;
  for (const KvPoolStats& p : e.kv_pools) {
    s.kv_pools.push_back(proto::KvPoolSnapshot{p.kind, p.layers, p.window, p.blocks_total, p.blocks_used,
                                               p.blocks_cached, p.bytes_per_block * p.blocks_total,
                                               p.bytes_per_block * p.blocks_used});
  }
  s.prefix_hit_tokens = e.prefix_hit_tokens;
  s.prefix_query_tokens = e.prefix_query_tokens;
  s.prefix_hit_rate =
      e.prefix_query_tokens > 0 ? static_cast<double>(e.prefix_hit_tokens) / static_cast<double>(e.prefix_query_tokens) : 0.0;
  s.requests_finished = e.requests_finished;
  s.tokens_generated = e.tokens_generated;
  s.prompt_tokens_processed = e.prompt_tokens_processed;
  s.decode_tokens_per_s = e.decode_tokens_per_s;
  s.draft_tokens = e.draft_tokens;
  s.accepted_tokens = e.accepted_tokens;
  s.draft_acceptance_rate =
      e.draft_tokens > 0 ? static_cast<double>(e.accepted_tokens) / static_cast<double>(e.draft_tokens) : 0.0;
  s.ttft_ms = proto::make_histogram(e.ttft_ms_samples);
  s.itl_ms = proto::make_histogram(e.itl_ms_samples);
  s.server = server;
  return s;
}

}  // namespace vks

// ---- embed ----
namespace vks {

EmbedRequest to_engine_embed(const proto::EmbedRequest& w, std::chrono::steady_clock::time_point now) {
  EmbedRequest q;
  q.id = w.id;
  q.texts = w.input;
  q.token_inputs = w.tokens;
  q.add_bos = w.add_bos;
  q.normalize = w.normalize.value_or(q.normalize);
  if (w.pooling) q.pooling = pooling_from_name(*w.pooling);  // the parser allowed only known names
  q.priority = w.priority.value_or(q.priority);
  if (w.deadline_ms) q.deadline = now + std::chrono::milliseconds(*w.deadline_ms);
  return q;
}

proto::ProtocolError error_from_embed_submit(const SubmitResult& result) {
  std::string field = field_from_message(result.message);
  std::string message = result.message.empty() ? "request rejected by the engine" : result.message;
  if (result.code == ErrorCode::kInvalidArgument && result.prompt_tokens > 0) {
    return make_error(WireError::kPromptTooLong, std::move(message), std::move(field));
  }
  return make_error(wire_error_from_engine(result.code), std::move(message), std::move(field));
}

proto::EmbedAnswer embed_answer_from_engine(const EngineEvent& finished) {
  proto::EmbedAnswer a;
  a.id = finished.request_id;
  a.embeddings = finished.embeddings;
  a.usage.prompt_tokens = finished.usage.prompt_tokens;
  return a;
}

proto::ProtocolError embed_failure(FinishReason reason, const EngineEvent* error_event) {
  switch (reason) {
    case FinishReason::kCancelled: return make_error(WireError::kCancelled, "the embed request was cancelled");
    case FinishReason::kDeadline: return make_error(WireError::kDeadlineExceeded, "deadline_ms passed before every input was embedded");
    default: break;
  }
  if (error_event != nullptr) return make_error(wire_error_from_engine(error_event->error_code), error_event->error_message);
  return make_error(WireError::kInternal, "the embed request failed");
}

}  // namespace vks
