#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "protocol/responses.h"
#include "protocol/topic.h"
#include "tests/protocol/msgpack_builder.h"
#include "tests/protocol/roundtrip.h"

namespace vks::proto {
namespace {

using test::answer_roundtrip;

ModelInfo sample_model() {
  ModelInfo m;
  m.name = "stories260K";
  m.architecture = "llama";
  m.vocab_size = 512;
  m.context_length = 512;
  m.dim = 64;
  m.n_layers = 5;
  m.n_heads = 8;
  m.n_kv_heads = 4;
  m.head_dim = 8;
  m.hidden_dim = 172;
  m.parameters = 30'532'122'624;  // past int32: Qwen3-30B-A3B's count
  m.active_parameters = 3'352'965'120;
  m.n_experts = 128;
  m.n_experts_used = 8;
  m.expert_hidden_dim = 768;
  m.bos = 1;
  m.eos = 2;
  m.add_bos = true;
  m.device = "llvmpipe";
  m.kv_type = "q8_0/f16";
  m.kv_bytes_per_token = 22 * (288 + 512);
  return m;
}

void expect_model_eq(const ModelInfo& a, const ModelInfo& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.architecture, b.architecture);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.context_length, b.context_length);
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.hidden_dim, b.hidden_dim);
  EXPECT_EQ(a.parameters, b.parameters);
  EXPECT_EQ(a.active_parameters, b.active_parameters);
  EXPECT_EQ(a.n_experts, b.n_experts);
  EXPECT_EQ(a.n_experts_used, b.n_experts_used);
  EXPECT_EQ(a.expert_hidden_dim, b.expert_hidden_dim);
  EXPECT_EQ(a.bos, b.bos);
  EXPECT_EQ(a.eos, b.eos);
  EXPECT_EQ(a.add_bos, b.add_bos);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.kv_type, b.kv_type);
  EXPECT_EQ(a.kv_bytes_per_token, b.kv_bytes_per_token);
}

TEST(Answers, HelloRoundTrip) {
  HelloAnswer h;
  h.version = 1;
  h.server = "vkstreamd 0.1.0";
  h.model = sample_model();
  h.limits.max_frame_bytes = 4096;
  h.limits.max_prompt_tokens = 300;
  h.limits.max_tokens = 200;
  h.limits.max_output_bytes = 123456789012ull;
  h.limits.max_logit_bias = 9;
  h.pub_endpoint = "ipc:///run/vkstream/pub.zmq";
  h.router_endpoint = "ipc:///run/vkstream/router.zmq";
  h.retention_ms = 60000;
  const HelloAnswer out = answer_roundtrip(h);
  EXPECT_EQ(out.version, 1);
  EXPECT_EQ(out.server, h.server);
  expect_model_eq(out.model, h.model);
  EXPECT_EQ(out.limits.max_frame_bytes, 4096u);
  EXPECT_EQ(out.limits.max_prompt_tokens, 300);
  EXPECT_EQ(out.limits.max_tokens, 200);
  EXPECT_EQ(out.limits.max_output_bytes, 123456789012ull);
  EXPECT_EQ(out.limits.max_logit_bias, 9);
  EXPECT_EQ(out.limits.max_stop_strings, 16);
  EXPECT_EQ(out.pub_endpoint, h.pub_endpoint);
  EXPECT_EQ(out.router_endpoint, h.router_endpoint);
  EXPECT_EQ(out.retention_ms, 60000);
}

TEST(Answers, AcceptedCancelledTokenizeDetokenizeModel) {
  AcceptedAnswer a{"req-1", topic_for(StreamToken{}), 3, 17, true};
  const AcceptedAnswer ao = answer_roundtrip(a);
  EXPECT_EQ(ao.id, "req-1");
  EXPECT_EQ(ao.topic, a.topic);
  EXPECT_EQ(ao.queue_position, 3);
  EXPECT_EQ(ao.prompt_tokens, 17);
  EXPECT_TRUE(ao.detached);
  EXPECT_EQ(answer_roundtrip(CancelledAnswer{"abc"}, Tag::of("s")).id, "abc");
  EXPECT_EQ(answer_roundtrip(TokenizeAnswer{{1, 403, 9}}).ids, (std::vector<TokenId>{1, 403, 9}));
  EXPECT_EQ(answer_roundtrip(DetokenizeAnswer{"Once upon"}).text, "Once upon");
  expect_model_eq(answer_roundtrip(ModelAnswer{sample_model()}).model, sample_model());
}

TEST(Answers, StatusRoundTrip) {
  StatusAnswer s;
  s.id = "x";
  s.state = RequestState::kFinished;
  s.topic = "vks.00112233445566778899aabbccddeeff";
  s.last_seq = 41;
  s.prompt_tokens = 5;
  s.generated_tokens = 38;
  s.detached = true;
  s.reason = FinishReason::kLength;
  StatusAnswer o = answer_roundtrip(s);
  EXPECT_EQ(o.state, RequestState::kFinished);
  EXPECT_EQ(o.topic, s.topic);
  EXPECT_EQ(o.last_seq, 41);
  EXPECT_EQ(o.generated_tokens, 38);
  EXPECT_TRUE(o.detached);
  EXPECT_EQ(o.reason, FinishReason::kLength);
  s.state = RequestState::kQueued;
  s.reason.reset();
  s.queue_position = 4;
  s.last_seq = -1;
  o = answer_roundtrip(s);
  EXPECT_EQ(o.state, RequestState::kQueued);
  EXPECT_EQ(o.queue_position, 4);
  EXPECT_EQ(o.last_seq, -1);
  EXPECT_FALSE(o.reason.has_value());
}

TEST(Answers, ErrorRoundTrip) {
  ErrorAnswer e{make_error(WireError::kOverloaded, "queue full", ""), "req-9", 250};
  const ErrorAnswer o = answer_roundtrip(e);
  EXPECT_EQ(o.error.code, WireError::kOverloaded);
  EXPECT_EQ(o.error.message, "queue full");
  EXPECT_EQ(o.id, "req-9");
  EXPECT_EQ(o.retry_after_ms, 250);
  Result<ServerMessage> m =
      parse_server_message(encode_error(make_error(WireError::kInvalidField, "top_p: bad", "top_p"), Tag::of("q")));
  ASSERT_TRUE(m.ok());
  const ErrorAnswer& ea = std::get<ErrorAnswer>(m->body);
  EXPECT_EQ(ea.error.field, "top_p");
  EXPECT_EQ(m->tag, Tag::of("q"));
}

TEST(Answers, UnknownErrorCodeFromNewerServerIsInternal) {
  const std::string p = test::pack(test::obj({{"type", test::s("error")}, {"code", test::s("brand_new")}, {"message", test::s("m")}}));
  Result<ServerMessage> m = parse_server_message(p);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<ErrorAnswer>(m->body).error.code, WireError::kInternal);
}

TEST(Events, EventsCarryNoTag) {
  StreamEvent ev;
  ev.id = "r";
  const std::string a = encode_answer(AnswerBody(ev), Tag::of(5));
  EXPECT_EQ(a, encode_event(ev));
}

TEST(Events, AllFinishReasonsRoundTrip) {
  for (FinishReason r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kCancelled, FinishReason::kDeadline,
                         FinishReason::kError}) {
    EXPECT_EQ(parse_finish_reason(finish_reason_wire_name(r)), r);
  }
  EXPECT_FALSE(parse_finish_reason("bogus").has_value());
}

TEST(Replay, TypedRoundTrip) {
  ReplayAnswer p;
  p.id = "abc";
  for (int k = 0; k < 3; ++k) {
    StreamEvent ev;
    ev.id = "abc";
    ev.seq = 4 + k;
    ev.ids = {k};
    ev.text = std::to_string(k);
    p.events.push_back(ev);
  }
  p.next_seq = 7;
  p.finished = false;
  p.truncated = true;
  const ReplayAnswer o = answer_roundtrip(p);
  ASSERT_EQ(o.events.size(), 3u);
  EXPECT_EQ(o.events[2].seq, 6);
  EXPECT_EQ(o.events[2].text, "2");
  EXPECT_EQ(o.next_seq, 7);
  EXPECT_TRUE(o.truncated);
}

TEST(Replay, RawPayloadsAreEmbeddedAndTruncatedBySize) {
  std::vector<std::string> stored;
  for (int k = 0; k < 10; ++k) {
    StreamEvent ev;
    ev.id = "req";
    ev.seq = k;
    ev.text = std::string(100, static_cast<char>('a' + k));
    ev.ids = {k};
    if (k == 9) ev.type = StreamEventType::kFinished;
    stored.push_back(encode_event(ev));
  }
  // Everything.
  Result<ServerMessage> m = parse_server_message(encode_replay_raw("req", stored, 0, true, Tag::of(1)));
  ASSERT_TRUE(m.ok()) << m.error().message;
  const ReplayAnswer& all = std::get<ReplayAnswer>(m->body);
  ASSERT_EQ(all.events.size(), 10u);
  EXPECT_EQ(all.events.back().type, StreamEventType::kFinished);
  EXPECT_TRUE(all.finished);
  EXPECT_FALSE(all.truncated);
  EXPECT_EQ(all.next_seq, 10);
  // From seq 3, bounded size: fewer events, truncated, contiguous seqs.
  const std::span<const std::string> tail(stored.data() + 3, 7);
  const std::string bounded = encode_replay_raw("req", tail, 3, true, Tag::none(), 1000);
  EXPECT_LE(bounded.size(), 1000u);
  m = parse_server_message(bounded);
  ASSERT_TRUE(m.ok());
  const ReplayAnswer& part = std::get<ReplayAnswer>(m->body);
  ASSERT_GE(part.events.size(), 1u);
  ASSERT_LT(part.events.size(), 7u);
  for (size_t k = 0; k < part.events.size(); ++k) EXPECT_EQ(part.events[k].seq, static_cast<int64_t>(3 + k));
  EXPECT_TRUE(part.truncated);
  EXPECT_EQ(part.next_seq, 3 + static_cast<int64_t>(part.events.size()));
  // A limit smaller than one event still makes progress.
  m = parse_server_message(encode_replay_raw("req", tail, 3, true, Tag::none(), 10));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<ReplayAnswer>(m->body).events.size(), 1u);
  // Nothing to replay.
  m = parse_server_message(encode_replay_raw("req", {}, 10, true, Tag::none()));
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(std::get<ReplayAnswer>(m->body).events.empty());
  EXPECT_EQ(std::get<ReplayAnswer>(m->body).next_seq, 10);
}

TEST(ServerMessages, Malformed) {
  EXPECT_EQ(parse_server_message("\xc1").error().code, WireError::kBadFrame);
  EXPECT_EQ(parse_server_message(test::pack(test::i(1))).error().code, WireError::kInvalidRequest);
  Result<ServerMessage> m = parse_server_message(test::pack(test::obj({{"type", test::s("telepathy")}})));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, WireError::kUnknownType);
  m = parse_server_message(test::pack(test::obj({{"type", test::s("token")}, {"id", test::s("r")}})));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, WireError::kMissingField);
  EXPECT_EQ(m.error().field, "seq");
  m = parse_server_message(test::pack(test::obj({{"type", test::s("finished")}, {"id", test::s("r")}, {"seq", test::i(1)},
                                                 {"reason", test::s("stop")}, {"usage", test::obj({{"prompt_tokens", test::s("x")}})}})));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().field, "usage.prompt_tokens");
}

TEST(ErrorCodes, NamesAreUniqueAndInvertible) {
  std::set<std::string_view> names;
  for (int32_t k = 0; k < kWireErrorCount; ++k) {
    const auto code = static_cast<WireError>(k);
    const std::string_view name = wire_error_name(code);
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(parse_wire_error(name), code);
    for (char c : name) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '_') << name;
  }
  for (const char* required : {"invalid_request", "bad_frame", "frame_too_large", "unknown_type", "invalid_field",
                               "not_found", "overloaded", "too_many_requests", "prompt_too_long", "cancelled",
                               "deadline_exceeded", "internal", "unauthorized", "shutting_down", "slow_consumer"}) {
    EXPECT_TRUE(parse_wire_error(required).has_value()) << required;
  }
  EXPECT_FALSE(parse_wire_error("nope").has_value());
}

TEST(Events, InfiniteLogprobRoundTrips) {
  StreamEvent ev;
  ev.id = "r";
  ev.seq = 1;
  ev.ids = {3};
  ev.logprobs = {GeneratedToken{3, -0.5f, {{3, -0.5f}, {4, -std::numeric_limits<float>::infinity()}}}};
  Result<ServerMessage> m = parse_server_message(encode_event(ev));
  ASSERT_TRUE(m.ok()) << m.error().message;
  const StreamEvent& out = std::get<StreamEvent>(m->body);
  ASSERT_EQ(out.logprobs.size(), 1u);
  ASSERT_EQ(out.logprobs[0].top.size(), 2u);
  EXPECT_TRUE(std::isinf(out.logprobs[0].top[1].logprob));
}

// progress is not numbered (docs/PROTOCOL.md 5.8): no seq on the wire, -1 when read back; its
// counts round-trip; a numbered event without seq is still refused.
TEST(Events, ProgressHasNoSeqAndRoundTrips) {
  StreamEvent ev;
  ev.type = StreamEventType::kProgress;
  ev.id = "r";
  ev.seq = 7;  // ignored: progress takes no number
  ev.usage.prompt_tokens = 400;
  ev.usage.cached_tokens = 64;
  ev.prompt_tokens_done = 128;
  const std::string encoded = encode_event(ev);
  EXPECT_EQ(encoded.find("seq"), std::string::npos);
  Result<ServerMessage> m = parse_server_message(encoded);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(answer_type_name(m->body), "progress");
  const StreamEvent& out = std::get<StreamEvent>(m->body);
  EXPECT_EQ(out.type, StreamEventType::kProgress);
  EXPECT_EQ(out.seq, -1);
  EXPECT_EQ(out.usage.prompt_tokens, 400);
  EXPECT_EQ(out.usage.cached_tokens, 64);
  EXPECT_EQ(out.prompt_tokens_done, 128);

  StreamEvent token;
  token.type = StreamEventType::kToken;
  token.id = "r";
  std::string unnumbered = encode_event(token);
  const size_t at = unnumbered.find("seq");
  ASSERT_NE(at, std::string::npos);
  unnumbered[at] = 'x';  // the key "xeq": a token event without its seq
  EXPECT_FALSE(parse_server_message(unnumbered).ok());
}

TEST(Events, ToolCallRoundTripsAndFinishesWithToolCalls) {
  StreamEvent ev;
  ev.type = StreamEventType::kToolCall;
  ev.id = "r";
  ev.seq = 4;
  ev.call_index = 2;
  ev.call_id = "call_r_2";
  ev.call_name = "get_weather";
  ev.call_arguments = R"({"city":"Paris","days":1})";
  Result<ServerMessage> m = parse_server_message(encode_event(ev));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(answer_type_name(m->body), "tool_call");
  const StreamEvent& out = std::get<StreamEvent>(m->body);
  EXPECT_EQ(out.type, StreamEventType::kToolCall);
  EXPECT_EQ(out.seq, 4);
  EXPECT_EQ(out.call_index, 2);
  EXPECT_EQ(out.call_id, ev.call_id);
  EXPECT_EQ(out.call_name, ev.call_name);
  EXPECT_EQ(out.call_arguments, ev.call_arguments);

  StreamEvent fin;
  fin.type = StreamEventType::kFinished;
  fin.id = "r";
  fin.reason = FinishReason::kToolCalls;
  Result<ServerMessage> f = parse_server_message(encode_event(fin));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(std::get<StreamEvent>(f->body).reason, FinishReason::kToolCalls);
  EXPECT_EQ(finish_reason_wire_name(FinishReason::kToolCalls), "tool_calls");

}

TEST(Events, FinishedTimingsKeepTheDraftCounters) {
  StreamEvent ev;
  ev.type = StreamEventType::kFinished;
  ev.id = "r";
  ev.timings = Timings{1.0, 2.0, 3.0, 40, 31};
  Result<ServerMessage> m = parse_server_message(encode_event(ev));
  ASSERT_TRUE(m.ok()) << m.error().message;
  const StreamEvent& out = std::get<StreamEvent>(m->body);
  EXPECT_EQ(out.timings.draft_tokens, 40);
  EXPECT_EQ(out.timings.accepted_tokens, 31);
}

TEST(Encoding, FloatsAreAlwaysFloat64) {
  // Integral floats must stay floats on the wire (msgpack-cxx's pack_double would write ints).
  FinishReason r = FinishReason::kStop;
  StreamEvent ev;
  ev.type = StreamEventType::kFinished;
  ev.reason = r;
  ev.timings = Timings{1.0, 2.0, 3.0};
  const std::string bytes = encode_event(ev);
  const std::string needle = std::string("\xa8queue_ms\xcb", 10);
  EXPECT_NE(bytes.find(needle), std::string::npos);
  GenerateRequest g;
  g.prompt = "x";
  g.temperature = 0.0;
  const std::string req = encode_request(RequestBody(g));
  EXPECT_NE(req.find(std::string("\xabtemperature\xcb", 13)), std::string::npos);
}

}  // namespace
}  // namespace vks::proto
