// End to end: POST /v1/embeddings, /api/embed and the legacy /api/embeddings against the real
// vkstreamd (CPU reference, stories260K): the vectors equal the msgpack `embed` request's answer for
// the same inputs (floats and base64), token-id inputs work, Ollama's legacy endpoint answers the
// unnormalized vector, and bad inputs get 4xx in each API's error shape.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

#include "tests/http/http_daemon_suite.h"

namespace vks::test {
namespace {

using nlohmann::json;

const json kTexts = json::array({"Once upon a time", "Lily and her dog played in the park."});

class HttpEmbedE2eTest : public HttpDaemonSuite {
 protected:
  // The msgpack `embed` request's vectors (the request encoded from JSON with the wire's names).
  static std::optional<json> wire_embed(const json& fields) {
    UdsClient u;
    if (!u.connect(daemon_->socket_path())) return std::nullopt;
    json request = fields;
    request["type"] = "embed";
    request["tag"] = 1;
    const std::vector<uint8_t> packed = json::to_msgpack(request);
    if (!u.send(std::string(packed.begin(), packed.end()))) return std::nullopt;
    std::optional<std::string> frame = u.recv_frame(30000);
    if (!frame) return std::nullopt;
    const json answer = json::from_msgpack(*frame, true, false);
    if (!answer.is_object() || !answer.contains("embeddings")) {
      ADD_FAILURE() << "embed answer: " << answer.dump();
      return std::nullopt;
    }
    return answer["embeddings"];
  }
};

void expect_same_vectors(const json& got, const json& expected, const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), expected[i].size()) << what;
    ASSERT_GT(got[i].size(), 0u) << what;
    for (size_t k = 0; k < got[i].size(); ++k) {
      ASSERT_NEAR(got[i][k].get<double>(), expected[i][k].get<double>(), 1e-7) << what << " vector " << i << "[" << k << "]";
    }
  }
}

std::vector<float> from_base64(const std::string& text) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : text) {
    if (ch == '=') break;
    acc = (acc << 6) | static_cast<uint32_t>(kAlphabet.find(ch));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);  // little-endian host (x86, arm64)
  return out;
}

TEST_F(HttpEmbedE2eTest, OpenAiEmbeddingsEqualTheMsgpackEmbedAnswer) {
  const auto wire = wire_embed({{"input", kTexts}});
  ASSERT_TRUE(wire) << daemon_->log();
  auto r = call("/v1/embeddings", {{"model", "stories260K"}, {"input", kTexts}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["model"], "stories260K");
  EXPECT_GT(body["usage"]["prompt_tokens"].get<int>(), 4);
  json vectors = json::array();
  for (size_t i = 0; i < body["data"].size(); ++i) {
    EXPECT_EQ(body["data"][i]["index"], i);
    EXPECT_EQ(body["data"][i]["object"], "embedding");
    vectors.push_back(body["data"][i]["embedding"]);
  }
  expect_same_vectors(vectors, *wire, "float");
  double norm = 0;
  for (const json& v : vectors[0]) norm += v.get<double>() * v.get<double>();
  EXPECT_NEAR(norm, 1.0, 1e-5);

  auto b = call("/v1/embeddings", {{"input", kTexts}, {"encoding_format", "base64"}});
  ASSERT_TRUE(b);
  ASSERT_EQ(b->status, 200) << b->body;
  const json base64_body = json::parse(b->body);
  json decoded = json::array();
  for (const json& d : base64_body["data"]) decoded.push_back(from_base64(d["embedding"].get<std::string>()));
  expect_same_vectors(decoded, *wire, "base64");

  // One string, and token ids.
  auto one = call("/v1/embeddings", {{"input", kTexts[0]}});
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200) << one->body;
  expect_same_vectors(json::array({json::parse(one->body)["data"][0]["embedding"]}), json::array({(*wire)[0]}), "one string");
  const auto wire_ids = wire_embed({{"tokens", json::array({json::array({1, 403, 407, 261, 378})})}});
  ASSERT_TRUE(wire_ids);
  auto ids = call("/v1/embeddings", {{"input", json::array({1, 403, 407, 261, 378})}});
  ASSERT_TRUE(ids);
  ASSERT_EQ(ids->status, 200) << ids->body;
  expect_same_vectors(json::array({json::parse(ids->body)["data"][0]["embedding"]}), *wire_ids, "token ids");
}

TEST_F(HttpEmbedE2eTest, OllamaEmbedAndTheLegacyEndpoint) {
  const auto wire = wire_embed({{"input", kTexts}});
  ASSERT_TRUE(wire);
  auto r = call("/api/embed", {{"model", "stories260K"}, {"input", kTexts}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  expect_same_vectors(body["embeddings"], *wire, "ollama");
  EXPECT_GT(body["prompt_eval_count"].get<int>(), 4);
  EXPECT_GT(body["total_duration"].get<int64_t>(), 0);

  const auto raw = wire_embed({{"input", json::array({kTexts[0]})}, {"normalize", false}});
  ASSERT_TRUE(raw);
  auto legacy = call("/api/embeddings", {{"model", "stories260K"}, {"prompt", kTexts[0]}});
  ASSERT_TRUE(legacy);
  ASSERT_EQ(legacy->status, 200) << legacy->body;
  const json embedding = json::parse(legacy->body)["embedding"];
  expect_same_vectors(json::array({embedding}), *raw, "legacy");
  double norm = 0;
  for (const json& v : embedding) norm += v.get<double>() * v.get<double>();
  norm = std::sqrt(norm);
  ASSERT_GT(norm, 0);
  for (size_t k = 0; k < embedding.size(); ++k) {
    EXPECT_NEAR(embedding[k].get<double>() / norm, (*wire)[0][k].get<double>(), 1e-5);  // the normalized one, scaled
  }
}

TEST_F(HttpEmbedE2eTest, BadInputsAre4xxInEachApisShape) {
  std::string long_text;
  while (long_text.size() < 40000) long_text += "Once upon a time there was a little girl. ";
  const std::vector<std::tuple<std::string, json, int, std::string>> cases = {
      {"/v1/embeddings", {{"input", json::array()}}, 400, "input"},
      {"/v1/embeddings", {{"input", long_text}}, 400, "input"},
      {"/v1/embeddings", {{"input", "x"}, {"pooling", "max"}}, 400, "pooling"},
      {"/v1/embeddings", {{"input", "x"}, {"dimensions", 3}}, 400, "dimensions"},
      {"/v1/embeddings", {{"input", "x"}, {"model", "nope"}}, 404, "model"},
      {"/v1/embeddings", {{"input", json::array({json::array({999999})})}}, 400, ""},
  };
  for (const auto& [path, body, status, param] : cases) {
    auto r = call(path, body);
    ASSERT_TRUE(r) << body.dump().substr(0, 200);
    EXPECT_EQ(r->status, status) << body.dump().substr(0, 200) << " -> " << r->body;
    const json e = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(e.is_object()) << r->body;
    EXPECT_TRUE(e["error"]["message"].is_string()) << r->body;
    if (!param.empty()) {
      ASSERT_TRUE(e["error"]["param"].is_string()) << r->body;
      EXPECT_EQ(e["error"]["param"].get<std::string>().rfind(param, 0), 0u) << r->body;
    }
  }
  for (const json& body : {json{{"model", "stories260K"}, {"input", json::array({1})}},
                           json{{"model", "stories260K"}, {"input", long_text}}, json{{"input", "x"}}}) {
    auto r = call("/api/embed", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_TRUE(json::parse(r->body)["error"].is_string()) << r->body;
  }
  auto load = call("/api/embed", {{"model", "stories260K"}});
  ASSERT_TRUE(load);
  EXPECT_EQ(load->status, 200) << load->body;
}

}  // namespace
}  // namespace vks::test
