// Issue 37, first hour: the context size. vkstreamd --ctx-size N sizes each model's KV pool (N
// tokens across its sequences, as llama.cpp's server -c); hello says what fits; Ollama's
// options.num_ctx bounds a request inside it (larger than the pool: a 400 naming num_ctx and the
// limit; a prompt leaving no room: refused; generation ends when that context is full).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>

#include "tests/http/http_daemon_suite.h"

namespace vks::test {
namespace {

using nlohmann::json;

constexpr int kCtxSize = 256;  // stories260K's file says 2048

class HttpContextSizeE2eTest : public HttpDaemonSuite {
 protected:
  static void SetUpTestSuite() { start_daemon({"--ctx-size", std::to_string(kCtxSize)}); }

  static json generate(const json& options, const std::string& prompt = "Once upon a time") {
    const auto r = call("/api/generate", {{"model", "stories260K"}, {"prompt", prompt}, {"stream", false}, {"options", options}});
    if (!r) return json{{"status", -1}};
    json body = json::parse(r->body, nullptr, false);
    body["status"] = r->status;
    return body;
  }
};

TEST_F(HttpContextSizeE2eTest, HelloSaysWhatThePoolHolds) {
  UdsClient c;
  ASSERT_TRUE(c.connect(daemon_->socket_path()));
  const auto m = request(c, simple(proto::HelloRequest{}, 1), 5000);
  ASSERT_TRUE(m);
  const auto* hello = std::get_if<proto::HelloAnswer>(&m->body);
  ASSERT_NE(hello, nullptr);
  EXPECT_EQ(hello->limits.max_prompt_tokens, kCtxSize);
}

TEST_F(HttpContextSizeE2eTest, ARequestLargerThanThePoolSaysWhatFits) {
  const auto r = call("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 300}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const std::string message = json::parse(r->body)["error"]["message"].get<std::string>();
  EXPECT_NE(message.find(std::to_string(kCtxSize) + " tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("at most"), std::string::npos) << message;
}

TEST_F(HttpContextSizeE2eTest, OllamaNumCtxLargerThanThePoolIsRefusedNamingIt) {
  for (const char* path : {"/api/generate", "/api/chat"}) {
    json body = {{"model", "stories260K"}, {"stream", false}, {"options", {{"num_ctx", 4096}}}};
    if (std::string(path) == "/api/chat") {
      body["messages"] = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});
    } else {
      body["prompt"] = "Once upon a time";
    }
    const auto r = call(path, body);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path << ": " << r->body;
    const std::string message = json::parse(r->body)["error"].get<std::string>();
    EXPECT_EQ(message.rfind("options.num_ctx: 4096", 0), 0u) << message;
    EXPECT_NE(message.find(std::to_string(kCtxSize) + " tokens"), std::string::npos) << message;
  }
}

TEST_F(HttpContextSizeE2eTest, OllamaNumCtxBoundsTheRequest) {
  // A prompt longer than its num_ctx is refused, naming num_ctx.
  std::string long_prompt;
  for (int i = 0; i < 20; ++i) long_prompt += "Once upon a time ";
  const json refused = generate({{"num_ctx", 16}}, long_prompt);
  EXPECT_EQ(refused["status"], 400) << refused.dump();
  EXPECT_EQ(refused["error"].get<std::string>().rfind("options.num_ctx: ", 0), 0u) << refused.dump();

  // Generation ends when its context is full: prompt + generated = num_ctx, and greedy text equals
  // the same request bounded by num_predict instead.
  const json bounded = generate({{"num_ctx", 24}, {"temperature", 0}});
  ASSERT_EQ(bounded["status"], 200) << bounded.dump();
  const int prompt = bounded["prompt_eval_count"].get<int>();
  const int generated = bounded["eval_count"].get<int>();
  EXPECT_EQ(prompt + generated, 24) << bounded.dump();
  EXPECT_EQ(bounded["done_reason"], "length") << bounded.dump();
  const json reference = generate({{"num_predict", 24 - prompt}, {"temperature", 0}});
  ASSERT_EQ(reference["status"], 200) << reference.dump();
  EXPECT_EQ(bounded["response"], reference["response"]);
  // A num_predict inside num_ctx is kept.
  const json fewer = generate({{"num_ctx", 200}, {"num_predict", 3}, {"temperature", 0}});
  ASSERT_EQ(fewer["status"], 200) << fewer.dump();
  EXPECT_EQ(fewer["eval_count"], 3) << fewer.dump();
}

}  // namespace
}  // namespace vks::test
