// The embeddings endpoints' mappings without a daemon: OpenAI /v1/embeddings, Ollama /api/embed and
// legacy /api/embeddings bodies → the wire `embed` fields (input texts or token arrays, normalize,
// pooling), bad bodies a 4xx naming the field, a structured fuzzer (never a throw, never a 5xx), the
// answers' shapes, and base64 float32 against Python's struct/base64 encoding of the same floats.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>

#include "server/http/embeddings_api.h"

namespace vks::http {
namespace {

using nlohmann::json;

ModelCatalogue catalogue() {
  ModelCatalogue m;
  m.id = "stories260K";
  m.info.dim = 64;
  return m;
}

template <typename Result>
const EmbedHttpRequest& ok(const Result& r) {
  EXPECT_TRUE(std::holds_alternative<EmbedHttpRequest>(r)) << std::get<ApiError>(r).message;
  return std::get<EmbedHttpRequest>(r);
}

TEST(EmbeddingsMapping, OpenAiInputShapes) {
  const ModelCatalogue m = catalogue();
  auto one = map_openai_embeddings(json::parse(R"({"model":"stories260K","input":"hi"})"), m);
  ASSERT_TRUE(std::holds_alternative<EmbedHttpRequest>(one));
  EXPECT_EQ(ok(one).wire["input"], json::array({"hi"}));
  EXPECT_FALSE(ok(one).base64);
  auto many = map_openai_embeddings(json::parse(R"({"input":["a","b"],"encoding_format":"base64","normalize":false,"pooling":"last"})"), m);
  ASSERT_TRUE(std::holds_alternative<EmbedHttpRequest>(many));
  EXPECT_EQ(ok(many).wire["input"], json::array({"a", "b"}));
  EXPECT_TRUE(ok(many).base64);
  EXPECT_EQ(ok(many).wire["normalize"], false);
  EXPECT_EQ(ok(many).wire["pooling"], "last");
  auto ids = map_openai_embeddings(json::parse(R"({"input":[1,2,3]})"), m);
  ASSERT_TRUE(std::holds_alternative<EmbedHttpRequest>(ids));
  EXPECT_EQ(ok(ids).wire["tokens"], json::parse("[[1,2,3]]"));
  auto id_lists = map_openai_embeddings(json::parse(R"({"input":[[1],[2,3]],"dimensions":64})"), m);
  ASSERT_TRUE(std::holds_alternative<EmbedHttpRequest>(id_lists));
  EXPECT_EQ(ok(id_lists).wire["tokens"], json::parse("[[1],[2,3]]"));
}

TEST(EmbeddingsMapping, BadBodiesNameTheField) {
  const ModelCatalogue m = catalogue();
  const std::vector<std::pair<std::string, std::string>> openai = {
      {R"({})", "input"},
      {R"({"input":[]})", "input"},
      {R"({"input":["a",1]})", "input"},
      {R"({"input":{"a":1}})", "input"},
      {R"({"input":"a","encoding_format":"hex"})", "encoding_format"},
      {R"({"input":"a","dimensions":8})", "dimensions"},
      {R"({"input":"a","model":7})", "model"},
      {R"({"input":"a","user":7})", "user"},
  };
  for (const auto& [body, param] : openai) {
    auto r = map_openai_embeddings(json::parse(body), m);
    ASSERT_TRUE(std::holds_alternative<ApiError>(r)) << body;
    EXPECT_EQ(std::get<ApiError>(r).status, 400) << body;
    EXPECT_EQ(std::get<ApiError>(r).param, param) << body;
  }
  auto unknown = map_openai_embeddings(json::parse(R"({"model":"nope","input":"a"})"), m);
  ASSERT_TRUE(std::holds_alternative<ApiError>(unknown));
  EXPECT_EQ(std::get<ApiError>(unknown).status, 404);

  for (const auto& [body, param] : std::vector<std::pair<std::string, std::string>>{
           {R"({"input":"a"})", "model"},
           {R"({"model":"stories260K","input":[1]})", "input"},
           {R"({"model":"stories260K","input":"a","truncate":"yes"})", "truncate"}}) {
    auto r = map_ollama_embed(json::parse(body), m);
    ASSERT_TRUE(std::holds_alternative<ApiError>(r)) << body;
    EXPECT_EQ(std::get<ApiError>(r).param, param) << body;
  }
  auto legacy = map_ollama_embeddings_legacy(json::parse(R"({"model":"stories260K","prompt":["a"]})"), m);
  ASSERT_TRUE(std::holds_alternative<ApiError>(legacy));
  EXPECT_EQ(std::get<ApiError>(legacy).param, "prompt");
}

TEST(EmbeddingsMapping, OllamaBodiesAndLoadRequests) {
  const ModelCatalogue m = catalogue();
  auto r = map_ollama_embed(json::parse(R"({"model":"stories260K:latest","input":["a","b"],"truncate":false})"), m);
  ASSERT_TRUE(std::holds_alternative<EmbedHttpRequest>(r));
  EXPECT_EQ(ok(r).wire["input"], json::array({"a", "b"}));
  EXPECT_FALSE(ok(r).load_only);
  auto load = map_ollama_embed(json::parse(R"({"model":"stories260K"})"), m);
  ASSERT_TRUE(std::holds_alternative<EmbedHttpRequest>(load));
  EXPECT_TRUE(ok(load).load_only);
  auto legacy = map_ollama_embeddings_legacy(json::parse(R"({"model":"stories260K","prompt":"hi"})"), m);
  ASSERT_TRUE(std::holds_alternative<EmbedHttpRequest>(legacy));
  EXPECT_EQ(ok(legacy).wire["input"], json::array({"hi"}));
  EXPECT_EQ(ok(legacy).wire["normalize"], false);
}

TEST(EmbeddingsMapping, FuzzedBodiesNeverThrowNor5xx) {
  std::mt19937 rng(12);
  const std::vector<json> odd = {nullptr, true, -1, 1e300, "", "x", json::array(), json::object(),
                                 json::array({1, "a"}), json::array({json::array()}), 64};
  const json base = json::parse(R"({"model":"stories260K","input":["a","b"],"prompt":"p","encoding_format":"float",
                                    "dimensions":64,"truncate":true,"normalize":true,"pooling":"mean"})");
  const ModelCatalogue m = catalogue();
  for (int i = 0; i < 2000; ++i) {
    json body = base;
    for (int e = 0; e < 1 + static_cast<int>(rng() % 3); ++e) {
      auto it = body.begin();
      std::advance(it, static_cast<long>(rng() % body.size()));
      *it = odd[rng() % odd.size()];
    }
    for (int api = 0; api < 3; ++api) {
      std::variant<EmbedHttpRequest, ApiError> r;
      ASSERT_NO_THROW(r = api == 0 ? map_openai_embeddings(body, m)
                          : api == 1 ? map_ollama_embed(body, m)
                                     : map_ollama_embeddings_legacy(body, m))
          << body.dump();
      if (auto* e = std::get_if<ApiError>(&r)) {
        EXPECT_GE(e->status, 400);
        EXPECT_LT(e->status, 500);
        EXPECT_FALSE(e->message.empty());
      }
    }
  }
}

TEST(EmbeddingsMapping, AnswersAndBase64) {
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");
  EXPECT_EQ(base64_floats({1.0f, -2.0f}), "AACAPwAAAMA=");
  EXPECT_EQ(base64_floats({0.5f, 0.25f, -0.125f}), "AAAAPwAAgD4AAAC+");
  EXPECT_EQ(base64_floats({}), "");

  EmbedResult result;
  result.vectors = {{0.5f, 0.25f}, {1.0f, 0.0f}};
  result.prompt_tokens = 7;
  result.total_ns = 1000;
  EmbedHttpRequest r;
  r.api = EmbedApi::kOpenAi;
  json a = embeddings_answer(r, "stories260K", result);
  EXPECT_EQ(a["object"], "list");
  ASSERT_EQ(a["data"].size(), 2u);
  EXPECT_EQ(a["data"][1]["index"], 1);
  EXPECT_EQ(a["data"][0]["embedding"], json::parse("[0.5,0.25]"));
  EXPECT_EQ(a["usage"]["prompt_tokens"], 7);
  r.base64 = true;
  EXPECT_EQ(embeddings_answer(r, "stories260K", result)["data"][0]["embedding"], base64_floats({0.5f, 0.25f}));
  r.api = EmbedApi::kOllama;
  json o = embeddings_answer(r, "stories260K", result);
  EXPECT_EQ(o["embeddings"].size(), 2u);
  EXPECT_EQ(o["prompt_eval_count"], 7);
  r.api = EmbedApi::kOllamaLegacy;
  EXPECT_EQ(embeddings_answer(r, "stories260K", result)["embedding"], json::parse("[0.5,0.25]"));
}

}  // namespace
}  // namespace vks::http
