#include <gtest/gtest.h>

#include <limits>

#include "protocol/param_ranges.h"
#include "protocol/requests.h"
#include "protocol/version.h"
#include "tests/protocol/msgpack_builder.h"
#include "tests/protocol/roundtrip.h"

namespace vks::proto {
namespace {

using test::V;

ProtocolLimits test_limits() {
  ProtocolLimits l;
  l.max_prompt_tokens = 100;
  l.max_tokens = 500;
  return l;
}

Result<Request> parse(const V& v, const ProtocolLimits& limits = test_limits()) {
  return parse_request(test::pack(v), limits);
}

// The shared round trip, parsed under this file's limits (as every request here is).
template <class T>
T limited_roundtrip(const T& body, const Tag& tag = Tag::of("t-1")) {
  return test::request_roundtrip(body, tag, test_limits());
}

TEST(Requests, HelloRoundTrip) {
  HelloRequest h;
  h.version = 3;
  h.client = "unit-test";
  const HelloRequest out = limited_roundtrip(h);
  EXPECT_EQ(out.version, 3);
  EXPECT_EQ(out.client, "unit-test");
  Result<Request> bare = parse(test::obj({{"type", test::s("hello")}}));
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(std::get<HelloRequest>(bare->body).version, PROTOCOL_VERSION);
}

TEST(Requests, GenerateRoundTripEveryField) {
  GenerateRequest q;
  q.id = "my.req-1";
  q.prompt_ids = {1, 2, 3, 32000};
  q.add_bos = false;
  q.temperature = 0.5;
  q.top_k = 40;
  q.top_p = 0.9;
  q.min_p = 0.05;
  q.repetition_penalty = 1.1;
  q.presence_penalty = 0.25;
  q.frequency_penalty = -0.5;
  q.penalty_last_n = -1;
  q.logit_bias = {{5, -100.0}, {7, 2.5}};
  q.seed = 0xfedcba9876543210ull;
  q.max_tokens = 77;
  q.min_tokens = 3;
  q.ignore_eos = true;
  q.stop_token_ids = {2, 13};
  q.stop = {"\n\n", "The end"};
  q.logprobs = 5;
  q.priority = -7;
  q.deadline_ms = 1500;
  q.detached = true;
  q.stream = false;
  q.grammar = "root ::= \"a\"+\n";
  const GenerateRequest r = limited_roundtrip(q);
  EXPECT_EQ(r.id, q.id);
  EXPECT_EQ(r.prompt_ids, q.prompt_ids);
  EXPECT_TRUE(r.prompt.empty());
  EXPECT_EQ(r.add_bos, false);
  EXPECT_EQ(r.temperature, 0.5);
  EXPECT_EQ(r.top_k, 40);
  EXPECT_EQ(r.top_p, 0.9);
  EXPECT_EQ(r.min_p, 0.05);
  EXPECT_EQ(r.repetition_penalty, 1.1);
  EXPECT_EQ(r.presence_penalty, 0.25);
  EXPECT_EQ(r.frequency_penalty, -0.5);
  EXPECT_EQ(r.penalty_last_n, -1);
  EXPECT_EQ(r.logit_bias, q.logit_bias);
  EXPECT_EQ(r.seed, q.seed);
  EXPECT_EQ(r.max_tokens, 77);
  EXPECT_EQ(r.min_tokens, 3);
  EXPECT_EQ(r.ignore_eos, true);
  EXPECT_EQ(r.stop_token_ids, q.stop_token_ids);
  EXPECT_EQ(r.stop, q.stop);
  EXPECT_EQ(r.logprobs, 5);
  EXPECT_EQ(r.priority, -7);
  EXPECT_EQ(r.deadline_ms, 1500);
  EXPECT_TRUE(r.is_detached());
  EXPECT_FALSE(r.is_streamed());
  EXPECT_EQ(r.grammar, q.grammar);
}

TEST(Requests, JsonSchemaAsMapOrText) {
  const V schema = test::obj({{"type", test::s("object")},
                              {"properties", test::obj({{"n", test::obj({{"type", test::s("integer")}, {"maximum", test::d(2.5)}})}})},
                              {"required", test::arr({test::s("n")})}});
  Result<Request> r = parse(test::obj({{"type", test::s("generate")}, {"prompt", test::s("x")}, {"json_schema", schema}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  // The map's own key order, never sorted: properties are generated in the order they are declared.
  EXPECT_EQ(std::get<GenerateRequest>(r->body).json_schema,
            R"({"type":"object","properties":{"n":{"type":"integer","maximum":2.5}},"required":["n"]})");
  const V reason_first = test::obj({{"type", test::s("object")},
                                    {"properties", test::obj({{"reasoning", test::obj({{"type", test::s("string")}})},
                                                              {"answer", test::obj({{"type", test::s("string")}})}})}});
  r = parse(test::obj({{"type", test::s("generate")}, {"prompt", test::s("x")}, {"json_schema", reason_first}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(std::get<GenerateRequest>(r->body).json_schema,
            R"({"type":"object","properties":{"reasoning":{"type":"string"},"answer":{"type":"string"}}})");
  r = parse(test::obj({{"type", test::s("generate")}, {"prompt", test::s("x")}, {"json_schema", test::s("{\"type\":\"string\"}")}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(std::get<GenerateRequest>(r->body).json_schema, "{\"type\":\"string\"}");
}

TEST(Requests, GenerateAbsentFieldsStayUnset) {
  Result<Request> r = parse(test::obj({{"type", test::s("generate")}, {"prompt", test::s("Once upon a time")}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->tag.has_value());
  const GenerateRequest& g = std::get<GenerateRequest>(r->body);
  EXPECT_EQ(g.prompt, "Once upon a time");
  EXPECT_TRUE(g.id.empty());
  EXPECT_FALSE(g.add_bos.has_value());
  EXPECT_FALSE(g.max_tokens.has_value());
  EXPECT_FALSE(g.temperature.has_value());
  EXPECT_FALSE(g.seed.has_value());
  EXPECT_FALSE(g.wants_logprobs());  // absent: no logprobs at all
  EXPECT_FALSE(g.deadline_ms.has_value());
  EXPECT_FALSE(g.is_detached());
  EXPECT_TRUE(g.is_streamed());
  // Encoding sends only what is set: the payload is just type + prompt.
  const Result<Request> again = parse_request(encode_request(g), test_limits());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(std::get<GenerateRequest>(again->body).max_tokens.has_value());
}

TEST(Requests, MinTokensIsCheckedAgainstAGivenMaxTokens) {
  Result<Request> r = parse(test::obj({{"type", test::s("generate")}, {"prompt", test::s("x")},
                                       {"max_tokens", test::i(5)}, {"min_tokens", test::i(6)}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "min_tokens");
}

TEST(Requests, MinTokensWithoutMaxTokensIsAccepted) {
  // With max_tokens unset there is no upper bound to compare min_tokens with on the wire (the
  // engine checks it against the room the prompt leaves).
  Result<Request> r = parse(
      test::obj({{"type", test::s("generate")}, {"prompt", test::s("x")}, {"min_tokens", test::i(4)}}), test_limits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(std::get<GenerateRequest>(r->body).min_tokens, 4);
  EXPECT_FALSE(std::get<GenerateRequest>(r->body).max_tokens.has_value());
}

// Fault 5 of issue 14: the documented ranges hold at their extremes, through the one table.
TEST(Requests, ParameterExtremesOfTheRangeTableAreAccepted) {
  for (const ParamRange& range : kGenerateParamRanges) {
    if (range.name == "logit_bias") continue;
    const double lo = range.min_exclusive ? 1e-300 : range.min;
    for (double v : {lo, range.max}) {
      Result<Request> r = parse(test::obj({{"type", test::s("generate")}, {"prompt", test::s("x")},
                                           {std::string(range.name), range.integer ? test::i(static_cast<int64_t>(v)) : test::d(v)}}));
      EXPECT_TRUE(r.ok()) << range.name << " = " << v << ": " << (r.ok() ? "" : r.error().message);
    }
    if (!range.integer) {
      const double below = range.min_exclusive ? range.min : range.min - 0.5;
      Result<Request> r = parse(test::obj({{"type", test::s("generate")}, {"prompt", test::s("x")},
                                           {std::string(range.name), test::d(below)}}));
      ASSERT_FALSE(r.ok()) << range.name;
      EXPECT_EQ(r.error().field, range.name);
      EXPECT_NE(r.error().message.find(range.describe()), std::string::npos) << r.error().message;
    }
  }
}

// Fault 6 of issue 14: an unknown type that is not valid UTF-8 is quoted escaped, so the error
// answer stays decodable by strict msgpack decoders.
TEST(Requests, UnknownTypeWithInvalidUtf8IsEscaped) {
  Result<Request> r = parse(test::obj({{"type", test::s(std::string("ab\xff\xc3(\x01z"))}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, WireError::kUnknownType);
  EXPECT_EQ(r.error().message, "unknown request type \"ab\\xff\\xc3(\\x01z\"");
}

TEST(Requests, AcceptsAlternateSpellings) {
  // stop as one string, logit_bias with decimal-string keys (JavaScript maps), nil as absent,
  // integer temperature, unknown fields ignored.
  Result<Request> r = parse(test::obj({{"type", test::s("generate")},
                                       {"prompt", test::s("x")},
                                       {"stop", test::s("END")},
                                       {"logit_bias", test::map({{test::s("42"), test::i(-3)}})},
                                       {"seed", test::nil()},
                                       {"temperature", test::i(0)},
                                       {"future_field", test::arr({test::i(1)})}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const GenerateRequest& q = std::get<GenerateRequest>(r->body);
  EXPECT_EQ(q.stop, std::vector<std::string>{"END"});
  ASSERT_EQ(q.logit_bias.size(), 1u);
  EXPECT_EQ(q.logit_bias[0].first, 42);
  EXPECT_EQ(q.logit_bias[0].second, -3.0);
  EXPECT_FALSE(q.seed.has_value());
  EXPECT_EQ(q.temperature, 0.0);
}

TEST(Requests, OtherTypesRoundTrip) {
  EXPECT_EQ(limited_roundtrip(CancelRequest{"abc"}).id, "abc");
  EXPECT_EQ(limited_roundtrip(StatusRequest{"0123456789abcdef0123456789abcdef"}).id, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(limited_roundtrip(StatsRequest{StatsFormat::kMap}).format, StatsFormat::kMap);
  EXPECT_EQ(limited_roundtrip(StatsRequest{StatsFormat::kPrometheus}, Tag::of(-5)).format, StatsFormat::kPrometheus);
  const TokenizeRequest t = limited_roundtrip(TokenizeRequest{"héllo <s>", false, true});
  EXPECT_EQ(t.text, "héllo <s>");
  EXPECT_EQ(t.add_bos, std::optional<bool>(false));
  EXPECT_TRUE(t.parse_special);
  // Unset stays unset on the wire: the server's model decides.
  EXPECT_FALSE(limited_roundtrip(TokenizeRequest{"x"}).add_bos.has_value());
  EXPECT_EQ(limited_roundtrip(DetokenizeRequest{{1, 2, 3}}).ids, (std::vector<TokenId>{1, 2, 3}));
  limited_roundtrip(ModelRequest{}, Tag::none());
  const ReplayRequest p = limited_roundtrip(ReplayRequest{"r1", 17});
  EXPECT_EQ(p.id, "r1");
  EXPECT_EQ(p.from_seq, 17);
}

TEST(Requests, TypeNames) {
  EXPECT_EQ(request_type_name(RequestBody(HelloRequest{})), "hello");
  EXPECT_EQ(request_type_name(RequestBody(GenerateRequest{})), "generate");
  EXPECT_EQ(request_type_name(RequestBody(ReplayRequest{})), "replay");
}

// ---- framing-level and top-level errors --------------------------------------------------------

TEST(RequestErrors, NotMsgpack) {
  Result<Request> r = parse_request("\xc1\x00garbage", test_limits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, WireError::kBadFrame);
}

TEST(RequestErrors, TrailingBytes) {
  Result<Request> r = parse_request(test::pack(test::obj({{"type", test::s("model")}})) + "\x01", test_limits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, WireError::kBadFrame);
}

TEST(RequestErrors, TruncatedAtEveryLength) {
  const std::string full = encode_request(RequestBody(TokenizeRequest{"hello world", true, false}), Tag::of("x"));
  for (size_t n = 0; n < full.size(); ++n) {
    Result<Request> r = parse_request(std::string_view(full).substr(0, n), test_limits());
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().code, WireError::kBadFrame) << n;
  }
}

TEST(RequestErrors, ContainerClaimingMoreItemsThanBytes) {
  // map with one entry "ids" → array32 claiming 2^32-1 items, then nothing.
  std::string p = "\x82\xa4type\xaa" "detokenize\xa3ids\xdd\xff\xff\xff\xff";
  Result<Request> r = parse_request(p, test_limits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, WireError::kBadFrame);
}

TEST(RequestErrors, TooDeep) {
  test::V v = test::i(1);
  for (int k = 0; k < 20; ++k) v = test::arr({v});
  Result<Request> r = parse(test::obj({{"type", test::s("model")}, {"x", v}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, WireError::kBadFrame);
}

TEST(RequestErrors, NotAMap) {
  for (const V& v : {test::arr({test::s("type")}), test::i(3), test::s("generate"), test::nil()}) {
    Result<Request> r = parse(v);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, WireError::kInvalidRequest);
  }
}

TEST(RequestErrors, MissingOrBadType) {
  Result<Request> r = parse(test::obj({{"prompt", test::s("x")}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, WireError::kInvalidRequest);
  EXPECT_EQ(r.error().field, "type");
  r = parse(test::obj({{"type", test::i(1)}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, WireError::kInvalidRequest);
  EXPECT_EQ(r.error().field, "type");
}

TEST(RequestErrors, UnknownType) {
  Result<Request> r = parse(test::obj({{"type", test::s("launch_missiles")}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, WireError::kUnknownType);
  EXPECT_EQ(r.error().field, "type");
  EXPECT_NE(r.error().message.find("launch_missiles"), std::string::npos);
}

TEST(RequestErrors, BadTag) {
  for (const V& tag : {test::d(1.5), test::arr({}), test::s(std::string(300, 't')), test::u(UINT64_MAX)}) {
    Result<Request> r = parse(test::obj({{"type", test::s("model")}, {"tag", tag}}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, WireError::kInvalidField);
    EXPECT_EQ(r.error().field, "tag");
  }
}

TEST(RequestErrors, PeekTagRecoversTagOfInvalidRequest) {
  EXPECT_EQ(peek_tag(test::pack(test::obj({{"type", test::s("nope")}, {"tag", test::i(99)}}))), Tag::of(99));
  EXPECT_EQ(peek_tag(test::pack(test::obj({{"type", test::s("generate")}, {"tag", test::s("a")}}))), Tag::of("a"));
  EXPECT_FALSE(peek_tag("\xc1").has_value());
  EXPECT_FALSE(peek_tag(test::pack(test::arr({}))).has_value());
}

// ---- field validation: each bad field is named -----------------------------------------------

struct FieldCase {
  const char* name;
  V request;
  WireError code;
  const char* field;
};

V gen(std::initializer_list<std::pair<std::string, V>> extra) {
  V m = test::obj({{"type", test::s("generate")}, {"prompt", test::s("hello")}});
  for (const auto& [k, v] : extra) m = test::with(m, k, v);
  return m;
}

std::vector<FieldCase> field_cases() {
  const V base = gen({});
  std::vector<FieldCase> c;
  auto add = [&](const char* name, V req, WireError code, const char* field) { c.push_back({name, std::move(req), code, field}); };
  add("no prompt", test::without(base, "prompt"), WireError::kMissingField, "prompt");
  add("both prompts", gen({{"prompt_ids", test::arr({test::i(1)})}}), WireError::kInvalidField, "prompt_ids");
  add("prompt not string", gen({{"prompt", test::i(5)}}), WireError::kInvalidField, "prompt");
  add("prompt bin", gen({{"prompt", test::bin("abc")}}), WireError::kInvalidField, "prompt");
  add("prompt_ids not array", test::with(test::without(base, "prompt"), "prompt_ids", test::s("1 2")), WireError::kInvalidField, "prompt_ids");
  add("prompt_ids empty", test::with(test::without(base, "prompt"), "prompt_ids", test::arr({})), WireError::kInvalidField, "prompt_ids");
  add("prompt_ids negative", test::with(test::without(base, "prompt"), "prompt_ids", test::arr({test::i(1), test::i(-1)})), WireError::kInvalidField, "prompt_ids.1");
  add("prompt_ids huge id", test::with(test::without(base, "prompt"), "prompt_ids", test::arr({test::i(int64_t{1} << 40)})), WireError::kInvalidField, "prompt_ids.0");
  add("prompt_ids string item", test::with(test::without(base, "prompt"), "prompt_ids", test::arr({test::s("1")})), WireError::kInvalidField, "prompt_ids.0");
  add("prompt_ids too long", test::with(test::without(base, "prompt"), "prompt_ids", test::arr_of_ints(101, 1)), WireError::kPromptTooLong, "prompt_ids");
  add("add_bos int", gen({{"add_bos", test::i(1)}}), WireError::kInvalidField, "add_bos");
  add("max_tokens zero", gen({{"max_tokens", test::i(0)}}), WireError::kInvalidField, "max_tokens");
  add("max_tokens above limit", gen({{"max_tokens", test::i(501)}}), WireError::kInvalidField, "max_tokens");
  add("max_tokens float", gen({{"max_tokens", test::d(5.0)}}), WireError::kInvalidField, "max_tokens");
  add("max_tokens uint64", gen({{"max_tokens", test::u(UINT64_MAX)}}), WireError::kInvalidField, "max_tokens");
  add("min_tokens negative", gen({{"min_tokens", test::i(-1)}}), WireError::kInvalidField, "min_tokens");
  add("min above max", gen({{"max_tokens", test::i(5)}, {"min_tokens", test::i(6)}}), WireError::kInvalidField, "min_tokens");
  add("temperature negative", gen({{"temperature", test::d(-0.1)}}), WireError::kInvalidField, "temperature");
  add("temperature NaN", gen({{"temperature", test::d(std::numeric_limits<double>::quiet_NaN())}}), WireError::kInvalidField, "temperature");
  add("temperature inf", gen({{"temperature", test::d(std::numeric_limits<double>::infinity())}}), WireError::kInvalidField, "temperature");
  add("temperature string", gen({{"temperature", test::s("hot")}}), WireError::kInvalidField, "temperature");
  add("top_k negative", gen({{"top_k", test::i(-1)}}), WireError::kInvalidField, "top_k");
  add("top_p zero", gen({{"top_p", test::d(0.0)}}), WireError::kInvalidField, "top_p");
  add("top_p above 1", gen({{"top_p", test::d(1.5)}}), WireError::kInvalidField, "top_p");
  add("min_p above 1", gen({{"min_p", test::d(2.0)}}), WireError::kInvalidField, "min_p");
  add("repetition_penalty zero", gen({{"repetition_penalty", test::d(0.0)}}), WireError::kInvalidField, "repetition_penalty");
  add("presence_penalty huge", gen({{"presence_penalty", test::d(1e9)}}), WireError::kInvalidField, "presence_penalty");
  add("frequency_penalty bool", gen({{"frequency_penalty", test::b(true)}}), WireError::kInvalidField, "frequency_penalty");
  add("penalty_last_n -2", gen({{"penalty_last_n", test::i(-2)}}), WireError::kInvalidField, "penalty_last_n");
  add("logit_bias array", gen({{"logit_bias", test::arr({})}}), WireError::kInvalidField, "logit_bias");
  add("logit_bias bad key", gen({{"logit_bias", test::map({{test::s("abc"), test::d(1)}})}}), WireError::kInvalidField, "logit_bias.abc");
  add("logit_bias negative key", gen({{"logit_bias", test::map({{test::i(-4), test::d(1)}})}}), WireError::kInvalidField, "logit_bias.-4");
  add("logit_bias value", gen({{"logit_bias", test::map({{test::i(4), test::d(1000)}})}}), WireError::kInvalidField, "logit_bias.4");
  add("logit_bias value type", gen({{"logit_bias", test::map({{test::i(4), test::s("x")}})}}), WireError::kInvalidField, "logit_bias.4");
  add("logit_bias float key", gen({{"logit_bias", test::map({{test::d(1.5), test::d(1)}})}}), WireError::kInvalidField, "logit_bias");
  {
    V big = test::map({});
    for (int k = 0; k < 1025; ++k) {
      big.items.push_back(test::i(k));
      big.items.push_back(test::d(0.5));
    }
    add("logit_bias too many", gen({{"logit_bias", big}}), WireError::kInvalidField, "logit_bias");
  }
  add("seed negative", gen({{"seed", test::i(-1)}}), WireError::kInvalidField, "seed");
  add("seed string", gen({{"seed", test::s("1")}}), WireError::kInvalidField, "seed");
  add("stop int", gen({{"stop", test::i(1)}}), WireError::kInvalidField, "stop");
  add("stop empty string", gen({{"stop", test::arr({test::s("a"), test::s("")})}}), WireError::kInvalidField, "stop.1");
  add("stop item type", gen({{"stop", test::arr({test::i(3)})}}), WireError::kInvalidField, "stop.0");
  add("stop too long", gen({{"stop", test::arr({test::s(std::string(257, 'x'))})}}), WireError::kInvalidField, "stop.0");
  {
    V many = test::arr({});
    for (int k = 0; k < 17; ++k) many.items.push_back(test::s("s" + std::to_string(k)));
    add("stop too many", gen({{"stop", many}}), WireError::kInvalidField, "stop");
  }
  add("stop_token_ids type", gen({{"stop_token_ids", test::i(2)}}), WireError::kInvalidField, "stop_token_ids");
  add("stop_token_ids item", gen({{"stop_token_ids", test::arr({test::i(2), test::d(3.5)})}}), WireError::kInvalidField, "stop_token_ids.1");
  add("stop_token_ids too many", gen({{"stop_token_ids", test::arr_of_ints(65, 2)}}), WireError::kInvalidField, "stop_token_ids");
  add("ignore_eos string", gen({{"ignore_eos", test::s("yes")}}), WireError::kInvalidField, "ignore_eos");
  add("logprobs 21", gen({{"logprobs", test::i(21)}}), WireError::kInvalidField, "logprobs");
  add("logprobs negative", gen({{"logprobs", test::i(-1)}}), WireError::kInvalidField, "logprobs");
  add("priority huge", gen({{"priority", test::i(1000000)}}), WireError::kInvalidField, "priority");
  add("deadline zero", gen({{"deadline_ms", test::i(0)}}), WireError::kInvalidField, "deadline_ms");
  add("deadline too far", gen({{"deadline_ms", test::i(86'400'001)}}), WireError::kInvalidField, "deadline_ms");
  add("id bad chars", gen({{"id", test::s("a b")}}), WireError::kInvalidField, "id");
  add("id empty", gen({{"id", test::s("")}}), WireError::kInvalidField, "id");
  add("id too long", gen({{"id", test::s(std::string(65, 'a'))}}), WireError::kInvalidField, "id");
  add("id int", gen({{"id", test::i(5)}}), WireError::kInvalidField, "id");
  add("detached int", gen({{"detached", test::i(1)}}), WireError::kInvalidField, "detached");
  add("stream string", gen({{"stream", test::s("true")}}), WireError::kInvalidField, "stream");
  add("grammar int", gen({{"grammar", test::i(1)}}), WireError::kInvalidField, "grammar");
  add("json_schema int", gen({{"json_schema", test::i(1)}}), WireError::kInvalidField, "json_schema");
  add("json_schema bin", gen({{"json_schema", test::obj({{"x", test::bin("ab")}})}}), WireError::kInvalidField, "json_schema");
  add("json_schema int key", gen({{"json_schema", test::map({{test::i(1), test::s("a")}})}}), WireError::kInvalidField, "json_schema");
  add("hello version zero", test::obj({{"type", test::s("hello")}, {"version", test::i(0)}}), WireError::kInvalidField, "version");
  add("hello version string", test::obj({{"type", test::s("hello")}, {"version", test::s("1")}}), WireError::kInvalidField, "version");
  add("cancel no id", test::obj({{"type", test::s("cancel")}}), WireError::kMissingField, "id");
  add("cancel bad id", test::obj({{"type", test::s("cancel")}, {"id", test::s("../etc")}}), WireError::kInvalidField, "id");
  add("status id type", test::obj({{"type", test::s("status")}, {"id", test::arr({})}}), WireError::kInvalidField, "id");
  add("stats format", test::obj({{"type", test::s("stats")}, {"format", test::s("xml")}}), WireError::kInvalidField, "format");
  add("tokenize no text", test::obj({{"type", test::s("tokenize")}}), WireError::kMissingField, "text");
  add("tokenize parse_special", test::obj({{"type", test::s("tokenize")}, {"text", test::s("a")}, {"parse_special", test::i(0)}}), WireError::kInvalidField, "parse_special");
  add("detokenize no ids", test::obj({{"type", test::s("detokenize")}}), WireError::kMissingField, "ids");
  add("detokenize bad id", test::obj({{"type", test::s("detokenize")}, {"ids", test::arr({test::i(1), test::i(-2)})}}), WireError::kInvalidField, "ids.1");
  add("replay no id", test::obj({{"type", test::s("replay")}}), WireError::kMissingField, "id");
  add("replay negative seq", test::obj({{"type", test::s("replay")}, {"id", test::s("a")}, {"from_seq", test::i(-1)}}), WireError::kInvalidField, "from_seq");
  return c;
}

TEST(RequestErrors, EachBadFieldIsNamed) {
  for (const FieldCase& fc : field_cases()) {
    Result<Request> r = parse(fc.request);
    ASSERT_FALSE(r.ok()) << fc.name;
    EXPECT_EQ(r.error().code, fc.code) << fc.name << ": " << r.error().message;
    EXPECT_EQ(r.error().field, fc.field) << fc.name << ": " << r.error().message;
    EXPECT_FALSE(r.error().message.empty()) << fc.name;
  }
}

TEST(RequestErrors, DetokenizeLimit) {
  ProtocolLimits l = test_limits();
  l.max_detokenize_ids = 3;
  Result<Request> r = parse(test::obj({{"type", test::s("detokenize")}, {"ids", test::arr_of_ints(4, 1)}}), l);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "ids");
}

}  // namespace
}  // namespace vks::proto
