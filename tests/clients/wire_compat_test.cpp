// The client library's encoding and parsing agree with vks_protocol (the daemon's side): what the
// client sends parses to the intended request, and what the daemon sends parses to the right event.
#include <gtest/gtest.h>

#include "clients/cpp/src/wire.h"
#include "protocol/requests.h"
#include "protocol/responses.h"
#include "vkstream/types.h"

namespace {

TEST(WireCompat, EveryGenerateOptionReachesTheDaemonParser) {
  vkstream::GenerateOptions o;
  o.prompt = "Once upon a time";
  o.add_bos = false;
  o.max_tokens = 17;
  o.temperature = 0.5;
  o.top_k = 40;
  o.top_p = 0.9;
  o.min_p = 0.05;
  o.repetition_penalty = 1.1;
  o.presence_penalty = 0.2;
  o.frequency_penalty = 0.3;
  o.penalty_last_n = 32;
  o.logit_bias = {{13, -100.0}, {261, 2.5}};
  o.seed = 0xFFFFFFFFFFFFFFF0ull;  // above INT64_MAX: must travel as an unsigned
  o.stop = {"\n\n", "The end"};
  o.stop_token_ids = {2, 7};
  o.ignore_eos = true;
  o.min_tokens = 3;
  o.logprobs = 5;
  o.priority = 4;
  o.deadline_ms = 5000;
  o.id = "my-req.1";
  o.detached = true;
  o.stream = false;
  const std::string payload = vkstream::detail::encode_generate(o, 42);
  const vks::proto::Result<vks::proto::Request> parsed = vks::proto::parse_request(payload, vks::proto::ProtocolLimits{});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message << " (field " << parsed.error().field << ")";
  EXPECT_EQ(parsed->tag, vks::proto::Tag::of(42));
  const auto* g = std::get_if<vks::proto::GenerateRequest>(&parsed->body);
  ASSERT_NE(g, nullptr);
  const vks::proto::GenerateRequest& r = *g;
  EXPECT_EQ(r.prompt, "Once upon a time");
  EXPECT_EQ(r.add_bos, false);
  EXPECT_EQ(r.max_tokens, 17);
  EXPECT_EQ(r.temperature, 0.5);
  EXPECT_EQ(r.top_k, 40);
  EXPECT_EQ(r.top_p, 0.9);
  EXPECT_EQ(r.min_p, 0.05);
  EXPECT_EQ(r.repetition_penalty, 1.1);
  EXPECT_EQ(r.presence_penalty, 0.2);
  EXPECT_EQ(r.frequency_penalty, 0.3);
  EXPECT_EQ(r.penalty_last_n, 32);
  ASSERT_EQ(r.logit_bias.size(), 2u);
  EXPECT_EQ(r.logit_bias[0].first, 13);
  EXPECT_EQ(r.logit_bias[0].second, -100.0);
  EXPECT_EQ(r.seed, std::optional<uint64_t>(0xFFFFFFFFFFFFFFF0ull));
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n\n", "The end"}));
  EXPECT_EQ(r.stop_token_ids, (std::vector<vks::proto::TokenId>{2, 7}));
  EXPECT_EQ(r.ignore_eos, true);
  EXPECT_EQ(r.min_tokens, 3);
  EXPECT_EQ(r.logprobs, 5);
  EXPECT_EQ(r.priority, 4);
  EXPECT_EQ(r.deadline_ms, std::optional<int64_t>(5000));
  EXPECT_EQ(r.id, "my-req.1");
  EXPECT_TRUE(r.is_detached());
  EXPECT_FALSE(r.is_streamed());
}

TEST(WireCompat, PromptIdsAreSentInsteadOfText) {
  vkstream::GenerateOptions o;
  o.prompt = "ignored";
  o.prompt_ids = {1, 403, 407};
  const auto parsed = vks::proto::parse_request(vkstream::detail::encode_generate(o, 1), vks::proto::ProtocolLimits{});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const auto& g = std::get<vks::proto::GenerateRequest>(parsed->body);
  EXPECT_EQ(g.prompt_ids, (std::vector<vks::proto::TokenId>{1, 403, 407}));
}

TEST(WireCompat, SimpleRequestsParse) {
  const std::string payload = vkstream::detail::encode_simple_request(
      "replay", 7, vkstream::Value::Map{{"id", vkstream::Value("abc")}, {"from_seq", vkstream::Value(3)}});
  const auto parsed = vks::proto::parse_request(payload, vks::proto::ProtocolLimits{});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const auto* r = std::get_if<vks::proto::ReplayRequest>(&parsed->body);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->id, "abc");
  EXPECT_EQ(r->from_seq, 3);
}

TEST(WireCompat, ChatToolsReachTheDaemonParser) {
  vkstream::GenerateOptions o;
  o.messages = {{"user", "Weather?"},
                {"assistant", "", R"([{"id":"c1","type":"function","function":{"name":"w","arguments":"{}"}}])"},
                {"tool", "Sunny", "", "c1", "w"}};
  o.tools = R"([{"type":"function","function":{"name":"w","parameters":{"type":"object"}}}])";
  o.tool_choice = "function";
  o.tool_name = "w";
  o.parallel_tool_calls = false;
  const auto parsed = vks::proto::parse_request(vkstream::detail::encode_generate(o, 4), vks::proto::ProtocolLimits{});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const auto* chat = std::get_if<vks::proto::ChatRequest>(&parsed->body);
  ASSERT_NE(chat, nullptr);
  EXPECT_EQ(chat->tools, o.tools);
  EXPECT_EQ(chat->tool_choice, "function");
  EXPECT_EQ(chat->tool_name, "w");
  EXPECT_EQ(chat->parallel_tool_calls, std::optional<bool>(false));
  ASSERT_EQ(chat->messages.size(), 3u);
  EXPECT_NE(chat->messages[1].tool_calls.find("\"c1\""), std::string::npos);
  EXPECT_EQ(chat->messages[2].tool_call_id, "c1");
  EXPECT_EQ(chat->messages[2].name, "w");
}

TEST(WireCompat, DaemonEventsParseIntoClientEvents) {
  vks::proto::StreamEvent tok;
  tok.type = vks::proto::StreamEventType::kToken;
  tok.id = "0123456789abcdef0123456789abcdef";
  tok.seq = 3;
  tok.ids = {432, 383};
  tok.text = ", there";
  vks::proto::GeneratedToken g1;
  g1.id = 432;
  g1.logprob = -0.25f;
  g1.top = {{432, -0.25f}, {13, -2.0f}};
  vks::proto::GeneratedToken g2;
  g2.id = 383;
  g2.logprob = -0.5f;
  tok.logprobs = {g1, g2};
  const vkstream::Event ev = vkstream::parse_event(vkstream::detail::unpack_value(vks::proto::encode_event(tok)));
  EXPECT_EQ(ev.kind, vkstream::EventKind::kToken);
  EXPECT_EQ(ev.id, tok.id);
  EXPECT_EQ(ev.seq, 3);
  EXPECT_EQ(ev.ids, (std::vector<int32_t>{432, 383}));
  EXPECT_EQ(ev.text, ", there");
  ASSERT_EQ(ev.logprobs.size(), 2u);
  EXPECT_EQ(ev.logprobs[0].id, 432);
  EXPECT_FLOAT_EQ(static_cast<float>(ev.logprobs[0].logprob), -0.25f);
  ASSERT_EQ(ev.logprobs[0].top.size(), 2u);
  EXPECT_EQ(ev.logprobs[0].top[1].id, 13);

  vks::proto::StreamEvent fin;
  fin.type = vks::proto::StreamEventType::kFinished;
  fin.id = tok.id;
  fin.seq = 9;
  fin.reason = vks::proto::FinishReason::kCancelled;
  fin.usage = {5, 2, 4};
  fin.timings = {1.0, 2.0, 3.0};
  const vkstream::Event f = vkstream::parse_event(vkstream::detail::unpack_value(vks::proto::encode_event(fin)));
  EXPECT_EQ(f.kind, vkstream::EventKind::kFinished);
  EXPECT_TRUE(f.is_last());
  EXPECT_EQ(f.finish_reason, "cancelled");
  EXPECT_EQ(f.usage.prompt_tokens, 5);
  EXPECT_EQ(f.usage.cached_tokens, 2);
  EXPECT_EQ(f.usage.generated_tokens, 4);
  EXPECT_DOUBLE_EQ(f.timings.total_ms, 3.0);

  vks::proto::StreamEvent err;
  err.type = vks::proto::StreamEventType::kError;
  err.id = tok.id;
  err.seq = 8;
  err.error_code = vks::proto::WireError::kDeviceError;
  err.error_message = "boom";
  const vkstream::Event e = vkstream::parse_event(vkstream::detail::unpack_value(vks::proto::encode_event(err)));
  EXPECT_EQ(e.kind, vkstream::EventKind::kError);
  EXPECT_EQ(e.error_code, "device_error");
  EXPECT_EQ(e.error_message, "boom");

  vks::proto::StreamEvent call;
  call.type = vks::proto::StreamEventType::kToolCall;
  call.id = tok.id;
  call.seq = 5;
  call.call_index = 1;
  call.call_id = "call_" + tok.id + "_1";
  call.call_name = "get_weather";
  call.call_arguments = R"({"city":"Rome","days":3})";
  const vkstream::Event c = vkstream::parse_event(vkstream::detail::unpack_value(vks::proto::encode_event(call)));
  EXPECT_EQ(c.kind, vkstream::EventKind::kToolCall);
  EXPECT_EQ(c.seq, 5);
  EXPECT_EQ(c.tool_call.index, 1);
  EXPECT_EQ(c.tool_call.id, call.call_id);
  EXPECT_EQ(c.tool_call.name, "get_weather");
  EXPECT_EQ(c.tool_call.arguments, call.call_arguments);
  fin.reason = vks::proto::FinishReason::kToolCalls;
  EXPECT_EQ(vkstream::parse_event(vkstream::detail::unpack_value(vks::proto::encode_event(fin))).finish_reason, "tool_calls");

  vks::proto::StreamEvent progress;  // not numbered: no seq on the wire
  progress.type = vks::proto::StreamEventType::kProgress;
  progress.id = tok.id;
  progress.usage.prompt_tokens = 300;
  progress.usage.cached_tokens = 32;
  progress.prompt_tokens_done = 96;
  const vkstream::Event p = vkstream::parse_event(vkstream::detail::unpack_value(vks::proto::encode_event(progress)));
  EXPECT_EQ(p.kind, vkstream::EventKind::kProgress);
  EXPECT_EQ(p.seq, -1);
  EXPECT_EQ(p.usage.prompt_tokens, 300);
  EXPECT_EQ(p.usage.cached_tokens, 32);
  EXPECT_EQ(p.prompt_tokens_done, 96);
  EXPECT_FALSE(p.is_last());
}

TEST(WireCompat, ReplayAnswerCarriesEvents) {
  vks::proto::ReplayAnswer ans;
  ans.id = "abc";
  vks::proto::StreamEvent t;
  t.type = vks::proto::StreamEventType::kToken;
  t.id = "abc";
  t.seq = 4;
  t.text = "x";
  ans.events = {t};
  ans.next_seq = 5;
  ans.truncated = true;
  const vkstream::Value v = vkstream::detail::unpack_value(vks::proto::encode_answer(ans, vks::proto::Tag::of(3)));
  EXPECT_EQ(v.get_string("type"), "replay");
  EXPECT_EQ(v.get_int("tag"), 3);
  EXPECT_EQ(v.get_int("next_seq"), 5);
  EXPECT_TRUE(v.get_bool("truncated"));
  const vkstream::Value* evs = v.find("events");
  ASSERT_NE(evs, nullptr);
  ASSERT_NE(evs->as_array(), nullptr);
  ASSERT_EQ(evs->as_array()->size(), 1u);
  EXPECT_EQ(vkstream::parse_event((*evs->as_array())[0]).seq, 4);
}

}  // namespace
