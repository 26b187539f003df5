// The `embed` request and answer: round trips of every field, a single string input, and every
// bad field answered with its code and field name.
#include <gtest/gtest.h>

#include <cstring>

#include "protocol/requests.h"
#include "protocol/responses.h"
#include "tests/protocol/msgpack_builder.h"

namespace vks::proto {
namespace {

using test::V;
using namespace test;

ProtocolLimits embed_limits() {
  ProtocolLimits l;
  l.max_prompt_tokens = 8;
  return l;
}

Result<Request> parse_embed(const V& v) { return parse_request(pack(v), embed_limits()); }

void expect_error(const V& v, WireError code, const std::string& field) {
  Result<Request> r = parse_embed(v);
  ASSERT_FALSE(r.ok()) << field;
  EXPECT_EQ(r.error().code, code) << r.error().message;
  EXPECT_EQ(r.error().field, field) << r.error().message;
}

TEST(EmbedWire, RequestRoundTripEveryField) {
  EmbedRequest e;
  e.input = {"Once upon a time", "", "héllo"};
  e.add_bos = false;
  e.normalize = false;
  e.pooling = "cls";
  e.priority = -3;
  e.deadline_ms = 2500;
  e.id = "emb.1";
  Result<Request> r = parse_request(encode_request(RequestBody(e), Tag::of(9)), embed_limits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tag, Tag::of(9));
  const EmbedRequest& out = std::get<EmbedRequest>(r->body);
  EXPECT_EQ(out.input, e.input);
  EXPECT_TRUE(out.tokens.empty());
  EXPECT_EQ(out.add_bos, false);
  EXPECT_EQ(out.normalize, false);
  EXPECT_EQ(out.pooling, "cls");
  EXPECT_EQ(out.priority, -3);
  EXPECT_EQ(out.deadline_ms, 2500);
  EXPECT_EQ(out.id, "emb.1");
  EXPECT_EQ(request_type_name(r->body), "embed");

  EmbedRequest t;
  t.tokens = {{1, 2, 3}, {7}};
  Result<Request> rt = parse_request(encode_request(RequestBody(t)), embed_limits());
  ASSERT_TRUE(rt.ok()) << rt.error().message;
  const EmbedRequest& tout = std::get<EmbedRequest>(rt->body);
  EXPECT_EQ(tout.tokens, t.tokens);
  EXPECT_FALSE(tout.normalize.has_value());
  EXPECT_FALSE(tout.pooling.has_value());
}

TEST(EmbedWire, OneStringIsOneInput) {
  Result<Request> r = parse_embed(obj({{"type", s("embed")}, {"input", s("just one")}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(std::get<EmbedRequest>(r->body).input, std::vector<std::string>{"just one"});
}

TEST(EmbedWire, BadFields) {
  expect_error(obj({{"type", s("embed")}}), WireError::kMissingField, "input");
  expect_error(obj({{"type", s("embed")}, {"input", arr({s("a")})}, {"tokens", arr({arr({i(1)})})}}),
               WireError::kInvalidField, "tokens");
  expect_error(obj({{"type", s("embed")}, {"input", arr({})}}), WireError::kInvalidField, "input");
  expect_error(obj({{"type", s("embed")}, {"input", i(3)}}), WireError::kInvalidField, "input");
  expect_error(obj({{"type", s("embed")}, {"input", arr({s("a"), i(1)})}}), WireError::kInvalidField, "input.1");
  expect_error(obj({{"type", s("embed")}, {"tokens", arr({})}}), WireError::kInvalidField, "tokens");
  expect_error(obj({{"type", s("embed")}, {"tokens", arr({arr({i(1)}), arr({})})}}), WireError::kInvalidField, "tokens.1");
  expect_error(obj({{"type", s("embed")}, {"tokens", arr({i(1)})}}), WireError::kInvalidField, "tokens.0");
  expect_error(obj({{"type", s("embed")}, {"tokens", arr({arr({i(1), s("x")})})}}), WireError::kInvalidField, "tokens.0.1");
  expect_error(obj({{"type", s("embed")}, {"tokens", arr({arr({i(-1)})})}}), WireError::kInvalidField, "tokens.0.0");
  expect_error(obj({{"type", s("embed")}, {"tokens", arr({arr_of_ints(9, 1)})}}), WireError::kPromptTooLong, "tokens.0");
  const V ok = obj({{"type", s("embed")}, {"input", arr({s("a")})}});
  expect_error(with(ok, "pooling", s("max")), WireError::kInvalidField, "pooling");
  expect_error(with(ok, "pooling", i(1)), WireError::kInvalidField, "pooling");
  expect_error(with(ok, "normalize", s("yes")), WireError::kInvalidField, "normalize");
  expect_error(with(ok, "add_bos", i(1)), WireError::kInvalidField, "add_bos");
  expect_error(with(ok, "priority", i(5000)), WireError::kInvalidField, "priority");
  expect_error(with(ok, "deadline_ms", i(0)), WireError::kInvalidField, "deadline_ms");
  expect_error(with(ok, "id", s("bad id!")), WireError::kInvalidField, "id");
  EmbedRequest many;
  many.input.assign(kMaxEmbedInputs + 1, "x");
  Result<Request> r = parse_request(encode_request(RequestBody(many)), embed_limits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, WireError::kInvalidField);
  EXPECT_EQ(r.error().field, "input");
}

TEST(EmbedWire, AnswerRoundTripKeepsFloat32) {
  EmbedAnswer a;
  a.id = "emb.1";
  a.embeddings = {{0.1f, -2.5f, 3.0f, 1e-30f}, {0.0f, -0.0f, 7.0f, 0.333333f}};
  a.usage.prompt_tokens = 12;
  const std::string payload = encode_answer(AnswerBody(a), Tag::of("q"));
  Result<ServerMessage> m = parse_server_message(payload);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->tag, Tag::of("q"));
  EXPECT_EQ(answer_type_name(m->body), "embed");
  const EmbedAnswer& out = std::get<EmbedAnswer>(m->body);
  EXPECT_EQ(out.id, "emb.1");
  EXPECT_EQ(out.embeddings, a.embeddings);  // bit-exact: float32 on the wire
  EXPECT_EQ(out.usage.prompt_tokens, 12);
  // Each float is 5 bytes (0xca + 4), integral ones too.
  const char f32_three[] = {static_cast<char>(0xca), 0x40, 0x40, 0x00, 0x00};
  EXPECT_NE(payload.find(std::string(f32_three, 5)), std::string::npos);
}

TEST(EmbedWire, AnswerWithBadVectorsIsRejected) {
  const V bad = obj({{"type", s("embed")}, {"embeddings", arr({arr({d(1.0), s("x")})})}});
  Result<ServerMessage> m = parse_server_message(pack(bad));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().field, "embeddings.0.1");
  EXPECT_FALSE(parse_server_message(pack(obj({{"type", s("embed")}, {"embeddings", i(1)}}))).ok());
}

}  // namespace
}  // namespace vks::proto
