// Issue 33's wire pieces: `model` / `keep_alive` on the requests that carry them, the models / load /
// unload requests, their answers through the client-side parser (encode_answer -> parse), and the
// bad inputs the server must refuse with the field named.
#include <gtest/gtest.h>

#include <string>

#include "protocol/requests.h"
#include "protocol/responses.h"
#include "tests/protocol/msgpack_builder.h"
#include "tests/protocol/roundtrip.h"

namespace vks::proto {
namespace {

using test::V;

using test::answer_roundtrip;
using test::request_roundtrip;

TEST(ModelWire, GenerateChatAndEmbedCarryModelAndKeepAlive) {
  GenerateRequest g;
  g.prompt = "hi";
  g.model = "owner/repo:Q4_K_M";
  g.keep_alive = 12.5;
  const GenerateRequest go = request_roundtrip(g);
  EXPECT_EQ(go.model, "owner/repo:Q4_K_M");
  EXPECT_EQ(go.keep_alive, std::optional<double>(12.5));

  ChatRequest c;
  c.messages = {{"user", "hello"}};
  c.generate.model = "stories260K";
  c.generate.keep_alive = 0.0;
  const ChatRequest co = request_roundtrip(c);
  EXPECT_EQ(co.generate.model, "stories260K");
  EXPECT_EQ(co.generate.keep_alive, std::optional<double>(0.0));

  EmbedRequest e;
  e.input = {"a"};
  e.model = "embedder";
  e.keep_alive = -1.0;
  const EmbedRequest eo = request_roundtrip(e);
  EXPECT_EQ(eo.model, "embedder");
  EXPECT_EQ(eo.keep_alive, std::optional<double>(-1.0));

  // Absent stays absent: the default model and the server's --keep-alive.
  GenerateRequest bare;
  bare.prompt = "x";
  const GenerateRequest bo = request_roundtrip(bare);
  EXPECT_EQ(bo.model, "");
  EXPECT_FALSE(bo.keep_alive.has_value());
}

TEST(ModelWire, TokenizeDetokenizeAndModelRequestsNameAModel) {
  EXPECT_EQ(request_roundtrip(TokenizeRequest{"x", std::nullopt, false, "m1"}).model, "m1");
  EXPECT_EQ(request_roundtrip(DetokenizeRequest{{1, 2}, "m2"}).model, "m2");
  EXPECT_EQ(request_roundtrip(ModelRequest{"m3"}).model, "m3");
  EXPECT_EQ(request_roundtrip(ModelRequest{}).model, "");
}

TEST(ModelWire, ModelsLoadAndUnloadRequestsRoundTrip) {
  request_roundtrip(ModelsRequest{});
  const LoadRequest l = request_roundtrip(LoadRequest{"stories260K", 30.0});
  EXPECT_EQ(l.model, "stories260K");
  EXPECT_EQ(l.keep_alive, std::optional<double>(30.0));
  EXPECT_FALSE(request_roundtrip(LoadRequest{"m", std::nullopt}).keep_alive.has_value());
  EXPECT_EQ(request_roundtrip(UnloadRequest{"o/r:Q8_0"}).model, "o/r:Q8_0");
  EXPECT_EQ(request_type_name(RequestBody(ModelsRequest{})), "models");
  EXPECT_EQ(request_type_name(RequestBody(LoadRequest{})), "load");
  EXPECT_EQ(request_type_name(RequestBody(UnloadRequest{})), "unload");
}

TEST(ModelWire, NegativeKeepAliveMeansForeverAndIsClampedToMinusOne) {
  Result<Request> r = parse_request(
      test::pack(test::obj({{"type", test::s("load")}, {"model", test::s("m")}, {"keep_alive", test::i(-300)}})),
      ProtocolLimits{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(std::get<LoadRequest>(r->body).keep_alive, std::optional<double>(-1.0));
}

struct BadCase {
  const char* name;
  V request;
  WireError code;
  const char* field;
};

TEST(ModelWire, BadModelFieldsAreRefusedWithTheFieldNamed) {
  const BadCase cases[] = {
      {"control character", test::obj({{"type", test::s("generate")}, {"prompt", test::s("x")}, {"model", test::s("a\nb")}}),
       WireError::kInvalidField, "model"},
      {"DEL character", test::obj({{"type", test::s("tokenize")}, {"text", test::s("x")}, {"model", test::s("a\x7f")}}),
       WireError::kInvalidField, "model"},
      {"model not a string", test::obj({{"type", test::s("embed")}, {"input", test::arr({test::s("x")})}, {"model", test::i(3)}}),
       WireError::kInvalidField, "model"},
      {"model too long", test::obj({{"type", test::s("model")}, {"model", test::s(std::string(513, 'm'))}}),
       WireError::kInvalidField, "model"},
      {"empty model in load", test::obj({{"type", test::s("load")}, {"model", test::s("")}}), WireError::kInvalidField, "model"},
      {"no model in load", test::obj({{"type", test::s("load")}}), WireError::kMissingField, "model"},
      {"no model in unload", test::obj({{"type", test::s("unload")}}), WireError::kMissingField, "model"},
      {"keep_alive a string", test::obj({{"type", test::s("generate")}, {"prompt", test::s("x")}, {"keep_alive", test::s("5m")}}),
       WireError::kInvalidField, "keep_alive"},
      {"keep_alive a bool in load", test::obj({{"type", test::s("load")}, {"model", test::s("m")}, {"keep_alive", test::b(true)}}),
       WireError::kInvalidField, "keep_alive"},
      {"keep_alive beyond a year", test::obj({{"type", test::s("embed")}, {"input", test::arr({test::s("x")})}, {"keep_alive", test::d(1e12)}}),
       WireError::kInvalidField, "keep_alive"},
  };
  for (const BadCase& c : cases) {
    Result<Request> r = parse_request(test::pack(c.request), ProtocolLimits{});
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.error().code, c.code) << c.name << ": " << r.error().message;
    EXPECT_EQ(r.error().field, c.field) << c.name << ": " << r.error().message;
  }
}

TEST(ModelWire, AcceptedNamesItsModel) {
  AcceptedAnswer a{"req-1", "vks.0123", 0, 4, false, "stories260K"};
  EXPECT_EQ(answer_roundtrip(a).model, "stories260K");
  EXPECT_EQ(answer_roundtrip(AcceptedAnswer{"req-2", "t", 0, 1, false}).model, "");
}

TEST(ModelWire, ModelsAnswerRoundTripsEveryField) {
  ModelsAnswer m;
  m.max_loaded = 3;
  ServableModelEntry a;
  a.name = "stories260K";
  a.path = "/models/stories260K.gguf";
  a.size_bytes = 5'000'000'000ull;  // past 32 bits
  a.loaded = true;
  a.pinned = true;
  a.is_default = true;
  a.running = 2;
  a.resident_bytes = 6'000'000'000ull;
  a.expires_in_ms = -1;
  a.device = "llvmpipe";
  ServableModelEntry b;
  b.name = "o/r:Q4_K_M";
  b.path = "/cache/o/r/m.Q4_K_M.gguf";
  b.loading = true;
  b.expires_in_ms = 299'000;
  m.models = {a, b};
  const ModelsAnswer out = answer_roundtrip(m);
  EXPECT_EQ(out.max_loaded, 3);
  ASSERT_EQ(out.models.size(), 2u);
  const ServableModelEntry& x = out.models[0];
  EXPECT_EQ(x.name, a.name);
  EXPECT_EQ(x.path, a.path);
  EXPECT_EQ(x.size_bytes, a.size_bytes);
  EXPECT_TRUE(x.loaded);
  EXPECT_FALSE(x.loading);
  EXPECT_TRUE(x.pinned);
  EXPECT_TRUE(x.is_default);
  EXPECT_EQ(x.running, 2);
  EXPECT_EQ(x.resident_bytes, a.resident_bytes);
  EXPECT_EQ(x.expires_in_ms, -1);
  EXPECT_EQ(x.device, "llvmpipe");
  const ServableModelEntry& y = out.models[1];
  EXPECT_EQ(y.name, b.name);
  EXPECT_FALSE(y.loaded);
  EXPECT_TRUE(y.loading);
  EXPECT_FALSE(y.pinned);
  EXPECT_FALSE(y.is_default);
  EXPECT_EQ(y.expires_in_ms, 299'000);
  EXPECT_TRUE(answer_roundtrip(ModelsAnswer{}).models.empty());
}

TEST(ModelWire, LoadedAndUnloadedRoundTrip) {
  const LoadedAnswer l = answer_roundtrip(LoadedAnswer{"stories260K", 812.5});
  EXPECT_EQ(l.model, "stories260K");
  EXPECT_DOUBLE_EQ(l.load_ms, 812.5);
  const UnloadedAnswer u = answer_roundtrip(UnloadedAnswer{"m", true});
  EXPECT_EQ(u.model, "m");
  EXPECT_TRUE(u.was_loaded);
  EXPECT_FALSE(answer_roundtrip(UnloadedAnswer{"m", false}).was_loaded);
}

TEST(ModelWire, PullAndDeleteRequestsRoundTrip) {
  const PullRequest p = request_roundtrip(PullRequest{"o/r:Q8_0", true});
  EXPECT_EQ(p.model, "o/r:Q8_0");
  EXPECT_TRUE(p.stream);
  EXPECT_FALSE(request_roundtrip(PullRequest{"http://127.0.0.1:1/m.gguf", false}).stream);
  EXPECT_EQ(request_roundtrip(DeleteRequest{"o/r:Q8_0"}).model, "o/r:Q8_0");
  EXPECT_EQ(request_type_name(RequestBody(PullRequest{})), "pull");
  EXPECT_EQ(request_type_name(RequestBody(DeleteRequest{})), "delete");
  // stream absent: one answer only.
  Result<Request> r = parse_request(test::pack(test::obj({{"type", test::s("pull")}, {"model", test::s("a/b")}})),
                                    ProtocolLimits{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(std::get<PullRequest>(r->body).stream);
  const BadCase cases[] = {
      {"no model in pull", test::obj({{"type", test::s("pull")}}), WireError::kMissingField, "model"},
      {"empty model in pull", test::obj({{"type", test::s("pull")}, {"model", test::s("")}}), WireError::kInvalidField, "model"},
      {"stream not a bool", test::obj({{"type", test::s("pull")}, {"model", test::s("a/b")}, {"stream", test::s("yes")}}),
       WireError::kInvalidField, "stream"},
      {"no model in delete", test::obj({{"type", test::s("delete")}}), WireError::kMissingField, "model"},
  };
  for (const BadCase& c : cases) {
    Result<Request> bad = parse_request(test::pack(c.request), ProtocolLimits{});
    ASSERT_FALSE(bad.ok()) << c.name;
    EXPECT_EQ(bad.error().code, c.code) << c.name << ": " << bad.error().message;
    EXPECT_EQ(bad.error().field, c.field) << c.name;
  }
}

TEST(ModelWire, PulledProgressAndDeletedRoundTrip) {
  const PulledAnswer p = answer_roundtrip(PulledAnswer{"o/r:Q8_0", "/cache/o/r/m.Q8_0.gguf", 1u << 20, 4096});
  EXPECT_EQ(p.model, "o/r:Q8_0");
  EXPECT_EQ(p.path, "/cache/o/r/m.Q8_0.gguf");
  EXPECT_EQ(p.size_bytes, 1u << 20);
  EXPECT_EQ(p.downloaded_bytes, 4096u);
  const PullProgressAnswer g = answer_roundtrip(PullProgressAnswer{"o/r:Q8_0", 5'000'000'000ull, 6'000'000'000ull});
  EXPECT_EQ(g.model, "o/r:Q8_0");
  EXPECT_EQ(g.completed, 5'000'000'000ull);  // past 32 bits
  EXPECT_EQ(g.total, 6'000'000'000ull);
  EXPECT_EQ(answer_roundtrip(DeletedAnswer{"m"}).model, "m");
  EXPECT_EQ(answer_type_name(AnswerBody(PullProgressAnswer{})), "pull_progress");
  ErrorAnswer e;
  e.error = make_error(WireError::kPullFailed, "sha256 mismatch", "model");
  EXPECT_EQ(answer_roundtrip(e).error.code, WireError::kPullFailed);
  EXPECT_EQ(wire_error_name(WireError::kPullFailed), "pull_failed");
}

TEST(ModelWire, MalformedModelAnswersNameTheField) {
  const std::pair<V, const char*> cases[] = {
      {test::obj({{"type", test::s("models")}}), "models"},
      {test::obj({{"type", test::s("models")}, {"models", test::arr({test::i(1)})}}), "models.0"},
      {test::obj({{"type", test::s("models")}, {"models", test::arr({test::obj({{"name", test::s("a")}, {"running", test::i(-1)}})})}}),
       "models.0.running"},
      {test::obj({{"type", test::s("models")}, {"models", test::arr({test::obj({{"path", test::s("/x")}})})}}), "models.0.name"},
      {test::obj({{"type", test::s("loaded")}}), "model"},
      {test::obj({{"type", test::s("loaded")}, {"model", test::s("m")}, {"load_ms", test::s("fast")}}), "load_ms"},
      {test::obj({{"type", test::s("unloaded")}, {"model", test::s("m")}, {"was_loaded", test::i(1)}}), "was_loaded"},
      {test::obj({{"type", test::s("accepted")}, {"id", test::s("r")}, {"model", test::i(1)}}), "model"},
      {test::obj({{"type", test::s("pulled")}}), "model"},
      {test::obj({{"type", test::s("pulled")}, {"model", test::s("m")}, {"size_bytes", test::i(-1)}}), "size_bytes"},
      {test::obj({{"type", test::s("pull_progress")}, {"model", test::s("m")}, {"completed", test::s("half")}}), "completed"},
      {test::obj({{"type", test::s("deleted")}}), "model"},
  };
  for (const auto& [msg, field] : cases) {
    Result<ServerMessage> m = parse_server_message(test::pack(msg));
    ASSERT_FALSE(m.ok()) << field;
    EXPECT_EQ(m.error().field, field) << m.error().message;
  }
}

}  // namespace
}  // namespace vks::proto
