// The client library's model calls against a scripted fake daemon: `model` and `keep_alive` go out
// on the requests that name a model (and stay absent otherwise), models / load / unload come back
// typed, and a refused load is a ServerError with its code.
#include <gtest/gtest.h>

#include <mutex>

#include "tests/clients/fake_daemon.h"
#include "vkstream/client.h"

namespace {

using vkstream::Value;
using vks::test::FakeDaemon;

// Answers every request like a daemon serving "a" (default, loaded) and "b"; records what it got.
class ModelsDaemon {
 public:
  ModelsDaemon() : daemon_([this](const Value& req) { return handle(req); }) {}
  const std::string& socket_path() const { return daemon_.socket_path(); }
  std::vector<Value> received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }

 private:
  static Value answer(const Value& req, const std::string& type, Value::Map fields) {
    Value v = Value::Map{{"type", Value(type)}, {"tag", *req.find("tag")}};
    for (auto& [k, f] : fields) v.set(k, f);
    return v;
  }

  std::vector<Value> handle(const Value& req) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      received_.push_back(req);
    }
    const std::string type = req.get_string("type");
    const std::string model = req.get_string("model");
    if (type == "models") {
      Value a = Value::Map{{"name", Value("a")}, {"path", Value("/m/a.gguf")}, {"size_bytes", Value(uint64_t{5'000'000'000})},
                           {"loaded", Value(true)}, {"pinned", Value(true)}, {"default", Value(true)},
                           {"running", Value(2)}, {"resident_bytes", Value(uint64_t{7})}, {"expires_in_ms", Value(-1)},
                           {"device", Value("cpu")}};
      Value b = Value::Map{{"name", Value("b")}, {"path", Value("/m/b.gguf")}, {"loading", Value(true)},
                           {"expires_in_ms", Value(1500)}};
      return {answer(req, "models", {{"models", Value(Value::Array{a, b})}, {"max_loaded", Value(3)}})};
    }
    if (type == "load" && model == "broken") {
      return {answer(req, "error", {{"code", Value("model_load_failed")}, {"message", Value("not a GGUF")},
                                    {"field", Value("model")}})};
    }
    if (type == "load") return {answer(req, "loaded", {{"model", Value(model)}, {"load_ms", Value(12.5)}})};
    if (type == "unload") return {answer(req, "unloaded", {{"model", Value(model)}, {"was_loaded", Value(true)}})};
    if (type == "tokenize") return {answer(req, "tokenize", {{"ids", Value(Value::Array{Value(1)})}})};
    if (type == "detokenize") return {answer(req, "detokenize", {{"text", Value("x")}})};
    if (type == "model") return {answer(req, "model", {{"model", Value::Map{{"name", Value(model.empty() ? "a" : model)}}}})};
    if (type == "embed") return {answer(req, "embed", {{"id", Value("e")}, {"embeddings", Value(Value::Array{})}})};
    if (type == "generate" || type == "chat") {
      return {answer(req, "accepted", {{"id", Value("r1")}, {"model", Value(model.empty() ? "a" : model)}})};
    }
    return {};
  }

  std::mutex mu_;
  std::vector<Value> received_;  // under mu_
  FakeDaemon daemon_;            // last: its thread stops before the members it uses go
};

TEST(ClientModels, ModelsLoadAndUnloadAreTyped) {
  ModelsDaemon daemon;
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  const vkstream::ModelList list = c.models();
  EXPECT_EQ(list.max_loaded, 3);
  ASSERT_EQ(list.models.size(), 2u);
  const vkstream::ServedModel& a = list.models[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.path, "/m/a.gguf");
  EXPECT_EQ(a.size_bytes, 5'000'000'000u);
  EXPECT_TRUE(a.loaded && a.pinned && a.is_default);
  EXPECT_EQ(a.running, 2);
  EXPECT_EQ(a.resident_bytes, 7u);
  EXPECT_EQ(a.expires_in_ms, -1);
  EXPECT_EQ(a.device, "cpu");
  EXPECT_TRUE(list.models[1].loading);
  EXPECT_FALSE(list.models[1].loaded);
  EXPECT_EQ(list.models[1].expires_in_ms, 1500);

  const vkstream::LoadResult loaded = c.load("b", 60.0);
  EXPECT_EQ(loaded.model, "b");
  EXPECT_DOUBLE_EQ(loaded.load_ms, 12.5);
  const vkstream::UnloadResult unloaded = c.unload("b");
  EXPECT_EQ(unloaded.model, "b");
  EXPECT_TRUE(unloaded.was_loaded);
  c.load("b");

  const std::vector<Value> got = daemon.received();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[1].get_string("type"), "load");
  EXPECT_EQ(got[1].get_string("model"), "b");
  EXPECT_DOUBLE_EQ(got[1].get_double("keep_alive", 0), 60.0);
  EXPECT_EQ(got[2].get_string("type"), "unload");
  EXPECT_EQ(got[3].find("keep_alive"), nullptr);  // unset: the daemon's --keep-alive
}

TEST(ClientModels, RefusedLoadIsAServerErrorAndEmptyNamesAreUsageErrors) {
  ModelsDaemon daemon;
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  try {
    c.load("broken");
    FAIL() << "expected a ServerError";
  } catch (const vkstream::ServerError& e) {
    EXPECT_EQ(e.code(), "model_load_failed");
    EXPECT_EQ(e.field(), "model");
  }
  for (auto call : {+[](vkstream::Client& cl) { cl.load(""); }, +[](vkstream::Client& cl) { cl.unload(""); }}) {
    try {
      call(c);
      FAIL() << "expected a usage error";
    } catch (const vkstream::ClientError& e) {
      EXPECT_EQ(e.kind(), vkstream::ErrorKind::kUsage);
    }
  }
  EXPECT_EQ(daemon.received().size(), 1u);  // the empty names never left the client
}

TEST(ClientModels, RequestsNameTheirModelOnlyWhenGiven) {
  ModelsDaemon daemon;
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  vkstream::GenerateOptions g;
  g.prompt = "hi";
  g.model = "b";
  g.keep_alive = 0.0;
  EXPECT_EQ(c.submit(g).model, "b");
  vkstream::GenerateOptions chat;
  chat.messages = {{"user", "hello"}};
  chat.model = "b";
  c.submit(chat);
  c.tokenize("x", std::nullopt, false, "b");
  c.detokenize({1}, "b");
  vkstream::EmbedOptions e;
  e.model = "b";
  e.keep_alive = -1.0;
  c.embed({"x"}, e);
  EXPECT_EQ(c.model("b").get_string("name"), "b");
  // And without a model: nothing sent, the default answers.
  vkstream::GenerateOptions plain;
  plain.prompt = "hi";
  EXPECT_EQ(c.submit(plain).model, "a");
  c.tokenize("x");
  EXPECT_EQ(c.model().get_string("name"), "a");

  const std::vector<Value> got = daemon.received();
  ASSERT_EQ(got.size(), 9u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(got[i].get_string("model"), "b") << got[i].get_string("type");
  EXPECT_DOUBLE_EQ(got[0].get_double("keep_alive", 99), 0.0);
  EXPECT_EQ(got[1].get_string("type"), "chat");
  EXPECT_EQ(got[1].find("keep_alive"), nullptr);
  EXPECT_DOUBLE_EQ(got[4].get_double("keep_alive", 99), -1.0);
  for (size_t i = 6; i < 9; ++i) {
    EXPECT_EQ(got[i].find("model"), nullptr) << got[i].get_string("type");
    EXPECT_EQ(got[i].find("keep_alive"), nullptr) << got[i].get_string("type");
  }
}

TEST(ClientModels, AMalformedModelsAnswerIsAProtocolError) {
  FakeDaemon daemon([](const Value& req) -> std::vector<Value> {
    return {Value::Map{{"type", Value("models")}, {"tag", *req.find("tag")}, {"models", Value("not a list")}}};
  });
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  try {
    c.models();
    FAIL() << "expected a protocol error";
  } catch (const vkstream::ClientError& e) {
    EXPECT_EQ(e.kind(), vkstream::ErrorKind::kProtocol);
  }
}

}  // namespace
