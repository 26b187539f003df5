// server/engine_translation: the one place where engine types meet wire types.
#include "server/engine_translation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/sched/request_validation.h"
#include "protocol/param_ranges.h"
#include "tests/protocol/msgpack_builder.h"

namespace vks::proto {
namespace {

using vks::EngineEvent;
using vks::EngineStats;
using vks::ErrorCode;
using vks::EventType;
using vks::SubmitResult;

template <class T>
T roundtrip(const T& body, const Tag& tag = Tag::of(12)) {
  const std::string payload = encode_answer(AnswerBody(body), tag);
  Result<ServerMessage> m = parse_server_message(payload);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message + " field " + m.error().field);
  if (!m.ok()) return T{};
  EXPECT_TRUE(std::holds_alternative<T>(m->body));
  return std::get<T>(m->body);
}

TEST(Answers, StatsRoundTrip) {
  EngineStats e;
  e.waiting = 2;
  e.running = 3;
  e.kv_blocks_total = 100;
  e.kv_blocks_used = 25;
  e.kv_bytes_per_token = 12960;
  e.cpu_expert_layers = 5;
  e.prefix_hit_tokens = 30;
  e.prefix_query_tokens = 120;
  e.tokens_generated = 999;
  e.decode_tokens_per_s = 812.5;
  e.draft_tokens = 40;
  e.accepted_tokens = 30;
  e.ttft_ms_samples = {3, 7, 12, 250};
  e.itl_ms_samples = {1.5, 1.7};
  e.kv_pools = {KvPoolStats{"full", 1, 0, 100, 25, 7, 2048}, KvPoolStats{"window", 5, 8, 40, 6, 3, 10240}};
  ServerStats srv;
  srv.connections = 4;
  srv.requests_total = 77;
  srv.uptime_s = 12.5;
  StatsAnswer s;
  s.stats = make_stats_snapshot(e, srv);
  EXPECT_DOUBLE_EQ(s.stats.kv_usage, 0.25);
  EXPECT_DOUBLE_EQ(s.stats.prefix_hit_rate, 0.25);
  EXPECT_EQ(s.stats.draft_tokens, 40);
  EXPECT_DOUBLE_EQ(s.stats.draft_acceptance_rate, 0.75);
  EXPECT_NE(render_prometheus(s.stats).find("vkstream_draft_acceptance_ratio 0.75"), std::string::npos);
  EXPECT_EQ(s.stats.kv_bytes_per_token, 12960);
  EXPECT_NE(render_prometheus(s.stats).find("vkstream_kv_bytes_per_token 12960"), std::string::npos);
  EXPECT_EQ(s.stats.cpu_expert_layers, 5);
  EXPECT_NE(render_prometheus(s.stats).find("vkstream_cpu_expert_layers 5\n"), std::string::npos);
  // Per layer kind: a block's bytes times the blocks.
  ASSERT_EQ(s.stats.kv_pools.size(), 2u);
  EXPECT_EQ(s.stats.kv_pools[1].kind, "window");
  EXPECT_EQ(s.stats.kv_pools[1].window, 8);
  EXPECT_EQ(s.stats.kv_pools[1].layers, 5);
  EXPECT_EQ(s.stats.kv_pools[1].bytes_total, 40 * 10240);
  EXPECT_EQ(s.stats.kv_pools[1].bytes_used, 6 * 10240);
  EXPECT_EQ(s.stats.kv_pools[0].bytes_used, 25 * 2048);
  EXPECT_EQ(s.stats.kv_pools[0].blocks_cached, 7);
  EXPECT_NE(render_prometheus(s.stats).find("vkstream_kv_pool_bytes_used{kind=\"window\"} 61440\n"), std::string::npos);
  EXPECT_NE(render_prometheus(s.stats).find("vkstream_kv_pool_blocks{kind=\"full\"} 100\n"), std::string::npos);
  const StatsAnswer o = roundtrip(s);
  EXPECT_EQ(o.format, StatsFormat::kMap);
  EXPECT_EQ(o.stats, s.stats);
  StatsAnswer p;
  p.format = StatsFormat::kPrometheus;
  p.text = render_prometheus(s.stats);
  const StatsAnswer po = roundtrip(p);
  EXPECT_EQ(po.format, StatsFormat::kPrometheus);
  EXPECT_EQ(po.text, p.text);
}

EngineEvent engine_event(EventType t) {
  EngineEvent ev;
  ev.request_id = std::string(1, 'r');
  ev.type = t;
  return ev;
}

TEST(Events, FromEngineEveryType) {
  EngineEvent q = engine_event(EventType::kQueued);
  q.queue_position = 5;
  StreamEvent e = roundtrip(stream_event_from_engine(q, 0, false));
  EXPECT_EQ(e.type, StreamEventType::kQueued);
  EXPECT_EQ(e.queue_position, 5);
  EXPECT_EQ(e.seq, 0);
  EXPECT_EQ(e.id, "r");

  EXPECT_EQ(roundtrip(stream_event_from_engine(engine_event(EventType::kScheduled), 1, false)).type, StreamEventType::kScheduled);
  EXPECT_EQ(roundtrip(stream_event_from_engine(engine_event(EventType::kPreempted), 9, false)).type, StreamEventType::kPreempted);

  EngineEvent first = engine_event(EventType::kFirstToken);
  first.tokens = {vks::GeneratedToken{403, -0.25f, {{403, -0.25f}, {7, -2.0f}}}, vks::GeneratedToken{13, -1.0f, {}}};
  first.text = " Once";
  e = roundtrip(stream_event_from_engine(first, 2, true));
  EXPECT_EQ(e.type, StreamEventType::kToken);
  EXPECT_TRUE(e.first);
  EXPECT_EQ(e.ids, (std::vector<TokenId>{403, 13}));
  EXPECT_EQ(e.text, " Once");
  ASSERT_EQ(e.logprobs.size(), 2u);
  EXPECT_EQ(e.logprobs[0].id, 403);
  EXPECT_FLOAT_EQ(e.logprobs[0].logprob, -0.25f);
  ASSERT_EQ(e.logprobs[0].top.size(), 2u);
  EXPECT_EQ(e.logprobs[0].top[1].id, 7);
  EXPECT_FLOAT_EQ(e.logprobs[0].top[1].logprob, -2.0f);

  EngineEvent tok = first;
  tok.type = EventType::kToken;
  e = roundtrip(stream_event_from_engine(tok, 3, false));
  EXPECT_FALSE(e.first);
  EXPECT_TRUE(e.logprobs.empty());  // not requested: not sent
  EXPECT_EQ(e.seq, 3);

  EngineEvent err = engine_event(EventType::kError);
  err.error_code = ErrorCode::kDevice;
  err.error_message = "lost device";
  e = roundtrip(stream_event_from_engine(err, 4, false));
  EXPECT_EQ(e.type, StreamEventType::kError);
  EXPECT_EQ(e.error_code, WireError::kDeviceError);
  EXPECT_EQ(e.error_message, "lost device");

  EngineEvent fin = engine_event(EventType::kFinished);
  fin.reason = vks::FinishReason::kDeadline;
  fin.usage = vks::Usage{10, 4, 20};
  fin.timings = vks::Timings{1.5, 20.25, 300.0};
  e = roundtrip(stream_event_from_engine(fin, 5, false));
  EXPECT_EQ(e.type, StreamEventType::kFinished);
  EXPECT_EQ(e.reason, FinishReason::kDeadline);
  EXPECT_EQ(e.usage.prompt_tokens, 10);
  EXPECT_EQ(e.usage.cached_tokens, 4);
  EXPECT_EQ(e.usage.generated_tokens, 20);
  EXPECT_DOUBLE_EQ(e.timings.queue_ms, 1.5);
  EXPECT_DOUBLE_EQ(e.timings.ttft_ms, 20.25);
  EXPECT_DOUBLE_EQ(e.timings.total_ms, 300.0);
}

TEST(ErrorCodes, EngineMapping) {
  EXPECT_EQ(wire_error_from_engine(ErrorCode::kInvalidArgument), WireError::kInvalidField);
  EXPECT_EQ(wire_error_from_engine(ErrorCode::kNotFound), WireError::kNotFound);
  EXPECT_EQ(wire_error_from_engine(ErrorCode::kOverloaded), WireError::kOverloaded);
  EXPECT_EQ(wire_error_from_engine(ErrorCode::kOutOfMemory), WireError::kCapacityExceeded);
  EXPECT_EQ(wire_error_from_engine(ErrorCode::kCancelled), WireError::kCancelled);
  EXPECT_EQ(wire_error_from_engine(ErrorCode::kDeadlineExceeded), WireError::kDeadlineExceeded);
  EXPECT_EQ(wire_error_from_engine(ErrorCode::kUnsupported), WireError::kUnsupported);
  EXPECT_EQ(wire_error_from_engine(ErrorCode::kDevice), WireError::kDeviceError);
  EXPECT_EQ(wire_error_from_engine(ErrorCode::kIo), WireError::kInternal);

  SubmitResult too_long;
  too_long.code = ErrorCode::kInvalidArgument;
  too_long.prompt_tokens = 600;
  too_long.message = "prompt_text: 600 prompt tokens exceed the limit of 512";
  ProtocolError e = error_from_submit(too_long, 512);
  EXPECT_EQ(e.code, WireError::kPromptTooLong);
  EXPECT_EQ(e.field, "prompt");
  EXPECT_EQ(e.message, too_long.message);
  too_long.message = "prompt_ids: 600 prompt tokens exceed the limit of 512";
  EXPECT_EQ(error_from_submit(too_long, 512).field, "prompt_ids");
  SubmitResult no_room;
  no_room.code = ErrorCode::kOutOfMemory;
  no_room.message = "max_tokens: prompt (5 tokens) + max_tokens (9000) exceeds the whole KV cache of 4096 tokens";
  e = error_from_submit(no_room, 512);
  EXPECT_EQ(e.code, WireError::kCapacityExceeded);
  EXPECT_EQ(e.field, "max_tokens");
  SubmitResult no_field;
  no_field.code = ErrorCode::kInvalidArgument;
  no_field.message = "Something odd: no field here";
  EXPECT_EQ(error_from_submit(no_field, 512).field, "");
  no_field.message = "token id 9999 is outside the vocabulary";
  EXPECT_EQ(error_from_submit(no_field, 512).field, "");
  too_long.prompt_tokens = 10;
  EXPECT_EQ(error_from_submit(too_long, 512).code, WireError::kInvalidField);
  SubmitResult full;
  full.code = ErrorCode::kOverloaded;
  EXPECT_EQ(error_from_submit(full, 512).code, WireError::kOverloaded);
  EXPECT_FALSE(error_from_submit(full, 512).message.empty());
  full.message = "overloaded: 64 requests are waiting (max_queued); retry later";
  EXPECT_EQ(error_from_submit(full, 512).field, "");  // no spurious field "overloaded"
}

}  // namespace
}  // namespace vks::proto

namespace vks::proto {
namespace {


proto::GenerateRequest parsed_generate(const test::V& fields, const ProtocolLimits& limits) {
  Result<Request> r = parse_request(test::pack(fields), limits);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  return std::get<proto::GenerateRequest>(r->body);
}

TEST(ToEngine, AbsentFieldsGetTheDocumentedDefaults) {
  ProtocolLimits l;
  const proto::GenerateRequest w = parsed_generate(test::obj({{"type", test::s("generate")}, {"prompt", test::s("hi")}}), l);
  const vks::GenerateRequest q = to_engine_request(w);
  const vks::GenerateRequest def;
  EXPECT_EQ(q.prompt_text, "hi");
  EXPECT_TRUE(q.id.empty());
  EXPECT_FALSE(q.add_bos.has_value());  // unset: the model's tokenizer.ggml.add_bos_token decides
  EXPECT_EQ(q.stop.max_tokens, 0);  // unset: until the context is full
  EXPECT_FLOAT_EQ(q.sampling.temperature, def.sampling.temperature);
  EXPECT_FALSE(q.sampling.seed.has_value());
  EXPECT_EQ(q.logprobs, -1);  // absent: no logprobs at all
  EXPECT_FALSE(q.deadline.has_value());
}

TEST(ToEngine, AbsentMaxTokensStaysUnsetForTheEngine) {
  // 0 = not set: the engine generates until the context is full (within its max_new_tokens).
  ProtocolLimits l;
  l.max_tokens = 10;
  const proto::GenerateRequest w = parsed_generate(test::obj({{"type", test::s("generate")}, {"prompt", test::s("x")}}), l);
  EXPECT_EQ(to_engine_request(w).stop.max_tokens, 0);
}

TEST(ToEngine, DeadlineIsRelativeToNow) {
  const auto now = std::chrono::steady_clock::time_point(std::chrono::seconds(1000));
  proto::GenerateRequest w;
  w.prompt = "x";
  w.deadline_ms = 250;
  EXPECT_EQ(*to_engine_request(w, now).deadline, now + std::chrono::milliseconds(250));
}

TEST(ToEngine, EveryFieldArrives) {
  proto::GenerateRequest w;
  w.prompt_ids = {1, 2};
  w.add_bos = false;
  w.max_tokens = 9;
  w.min_tokens = 2;
  w.temperature = 0.5;
  w.top_k = 3;
  w.top_p = 0.75;
  w.min_p = 0.125;
  w.repetition_penalty = 1.5;
  w.presence_penalty = -2;
  w.frequency_penalty = 4;
  w.penalty_last_n = -1;
  w.logit_bias = {{7, -1.5}};
  w.seed = 99;
  w.stop = {"x"};
  w.stop_token_ids = {5};
  w.ignore_eos = true;
  w.logprobs = 0;
  w.priority = 8;
  w.id = "abc";
  w.grammar = "root ::= \"a\"";
  w.json_schema = "{}";
  const vks::GenerateRequest q = to_engine_request(w);
  EXPECT_EQ(q.prompt_ids, (std::vector<vks::TokenId>{1, 2}));
  EXPECT_EQ(q.add_bos, std::optional<bool>(false));
  EXPECT_EQ(q.stop.max_tokens, 9);
  EXPECT_EQ(q.stop.min_tokens, 2);
  EXPECT_FLOAT_EQ(q.sampling.temperature, 0.5f);
  EXPECT_EQ(q.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(q.sampling.top_p, 0.75f);
  EXPECT_FLOAT_EQ(q.sampling.min_p, 0.125f);
  EXPECT_FLOAT_EQ(q.sampling.repetition_penalty, 1.5f);
  EXPECT_FLOAT_EQ(q.sampling.presence_penalty, -2.0f);
  EXPECT_FLOAT_EQ(q.sampling.frequency_penalty, 4.0f);
  EXPECT_EQ(q.sampling.penalty_last_n, -1);
  ASSERT_EQ(q.sampling.logit_bias.size(), 1u);
  EXPECT_FLOAT_EQ(q.sampling.logit_bias[0].second, -1.5f);
  EXPECT_EQ(q.sampling.seed, std::optional<uint64_t>(99));
  EXPECT_EQ(q.stop.stop_strings, std::vector<std::string>{"x"});
  EXPECT_EQ(q.stop.stop_token_ids, std::vector<vks::TokenId>{5});
  EXPECT_TRUE(q.stop.ignore_eos);
  EXPECT_EQ(q.logprobs, 0);
  EXPECT_EQ(q.priority, 8);
  EXPECT_EQ(q.id, "abc");
  EXPECT_EQ(q.grammar, w.grammar);
  EXPECT_EQ(q.json_schema, w.json_schema);
}

// Fault 5 of issue 14: whatever the range table (and so the server's parser) accepts, the engine's
// own validation accepts too: repetition_penalty up to 100, presence/frequency ±100, top_p 1e-300.
TEST(ToEngine, EngineValidationAcceptsEveryExtremeOfTheRangeTable) {
  for (const ParamRange& range : kGenerateParamRanges) {
    for (double v : {range.min_exclusive ? 1e-300 : range.min, range.max}) {
      const std::string name(range.name);
      proto::GenerateRequest w;
      w.prompt = "x";
      if (name == "temperature") w.temperature = v;
      else if (name == "top_k") w.top_k = static_cast<int32_t>(v);
      else if (name == "top_p") w.top_p = v;
      else if (name == "min_p") w.min_p = v;
      else if (name == "repetition_penalty") w.repetition_penalty = v;
      else if (name == "presence_penalty") w.presence_penalty = v;
      else if (name == "frequency_penalty") w.frequency_penalty = v;
      else if (name == "penalty_last_n") w.penalty_last_n = static_cast<int32_t>(v);
      else if (name == "logit_bias") w.logit_bias = {{1, v}};
      else if (name == "priority") w.priority = static_cast<int32_t>(v);
      else FAIL() << "range " << name << " has no case here";
      const vks::GenerateRequest q = to_engine_request(w);
      vks::sched::SubmitLimits lim;
      lim.vocab_size = 32000;
      lim.context_length = 4096;
      lim.max_prompt_tokens = 4096;
      lim.max_new_tokens = 4096;
      lim.kv_blocks = 1024;
      lim.block_size = 16;
      const std::optional<vks::sched::Rejection> bad = vks::sched::check_params(q, lim);
      EXPECT_FALSE(bad.has_value()) << name << " = " << v << ": " << (bad ? bad->message : "");
    }
  }
}

}  // namespace
}  // namespace vks::proto
