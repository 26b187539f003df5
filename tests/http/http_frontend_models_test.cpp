// HttpFrontend with several models behind a fake Backend (no daemon, no model file): "alpha" is
// loaded and the default, "beta" is not loaded and resolves later (a uv timer, as a load would).
// Each API's request is routed to the wire `model` of the model it names; resolve errors are
// answered in each API's shape; the listings; keep_alive; Ollama's load and unload calls; a client
// that leaves while its model loads gets nothing submitted.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "server/http_frontend.h"
#include "tests/http/http_test_client.h"

namespace vks::test {
namespace {

using nlohmann::json;
using server::HttpFrontend;
using server::HttpModelStatus;

template <class Pred>
bool eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

http::ModelCatalogue entry(const std::string& id, int dim) {
  http::ModelCatalogue m;
  m.id = id;
  m.info.architecture = "llama";
  m.info.vocab_size = 100;
  m.info.dim = dim;
  m.info.context_length = 512;
  m.info.device = "gpu";
  m.file_bytes = 1000;
  m.digest = std::string(64, 'a');
  m.file_type = "Q4_0";
  return m;
}

// A model not loaded, as the listing has it: what its GGUF header says, no shapes.
http::ModelCatalogue header_only(const http::ModelCatalogue& full) {
  http::ModelCatalogue m;
  m.id = full.id;
  m.info.architecture = full.info.architecture;
  m.info.context_length = full.info.context_length;
  m.file_bytes = full.file_bytes;
  m.digest = full.digest;
  m.file_type = full.file_type;
  return m;
}

// What the fake backend was asked, read from the test thread.
struct Submitted {
  std::string kind;  // "generate", "chat", "embed", "work"
  std::string model;
  std::optional<double> keep_alive;
};
struct Resolve {
  std::string name;
  std::optional<double> keep_alive;
};

constexpr int kLoadMs = 20;  // how long loading "beta" takes

// How "beta" resolves: loaded later, or one of the resolve errors, or held until released.
enum class BetaMode { kLoad, kLoadFailed, kOverloaded, kHold };

class FakeServer {
 public:
  FakeServer() {
    std::promise<uint16_t> ready;
    auto port = ready.get_future();
    thread_ = std::thread([this, &ready] { run(ready); });
    port_ = port.get();
  }
  ~FakeServer() {
    uv_async_send(&stop_);
    thread_.join();
  }
  uint16_t port() const { return port_; }

  std::optional<RawResponse> call(const std::string& method, const std::string& path, const std::string& body = {}) {
    RawHttpClient c;
    if (!c.connect_tcp(port_)) return std::nullopt;
    if (!c.send(http_request(method, path, body))) return std::nullopt;
    return c.read_response();
  }

  std::vector<Submitted> submitted() {
    std::lock_guard lock(mu_);
    return submitted_;
  }
  std::vector<Resolve> resolves() {
    std::lock_guard lock(mu_);
    return resolves_;
  }
  std::vector<std::string> unloads() {
    std::lock_guard lock(mu_);
    return unloads_;
  }
  std::vector<bool> still_wanted_at_completion() {
    std::lock_guard lock(mu_);
    return still_wanted_;
  }

  std::atomic<BetaMode> beta_mode{BetaMode::kLoad};
  std::atomic<bool> release{false};
  std::atomic<int> pending{0};     // beta resolves not completed yet
  std::atomic<int> completed{0};   // beta resolves completed (done called)
  std::atomic<int> closed{0};      // connections the front end saw close

 private:
  struct Pending {
    std::chrono::steady_clock::time_point asked = std::chrono::steady_clock::now();
    std::function<bool()> still_wanted;
    HttpFrontend::Backend::ResolvedModel done;
  };

  void run(std::promise<uint16_t>& ready) {
    uv_loop_init(&loop_);
    uv_async_init(&loop_, &stop_, [](uv_async_t* a) {
      auto* self = static_cast<FakeServer*>(a->data);
      self->frontend_->stop_accepting();
      self->frontend_->close_all(false);
      uv_close(reinterpret_cast<uv_handle_t*>(&self->stop_), nullptr);
      uv_close(reinterpret_cast<uv_handle_t*>(&self->timer_), nullptr);
    });
    stop_.data = this;
    uv_timer_init(&loop_, &timer_);
    timer_.data = this;
    uv_timer_start(&timer_, [](uv_timer_t* t) { static_cast<FakeServer*>(t->data)->tick(); }, 5, 5);
    server::HttpFrontendOptions options;
    options.endpoints = {"127.0.0.1:0"};
    frontend_ = std::make_unique<HttpFrontend>(&loop_, options, backend());
    uint16_t port = 0;
    try {
      frontend_->start(std::nullopt);
      const std::string address = frontend_->addresses().at(0);
      port = static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
    } catch (...) {
    }
    ready.set_value(port);
    uv_run(&loop_, UV_RUN_DEFAULT);
    frontend_.reset();
    uv_loop_close(&loop_);
  }

  // Completes beta's pending resolves (on the loop, later than the request: as a load would).
  void tick() {
    const BetaMode mode = beta_mode.load();
    if (mode == BetaMode::kHold && !release.load()) return;
    // A load takes at least kLoadMs (answers' load_duration shows it).
    std::vector<Pending> now;
    for (auto it = pending_.begin(); it != pending_.end();) {
      const bool due = std::chrono::steady_clock::now() - it->asked >= std::chrono::milliseconds(kLoadMs);
      if (due || mode == BetaMode::kHold) {
        now.push_back(std::move(*it));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    for (Pending& p : now) {
      {
        std::lock_guard lock(mu_);
        still_wanted_.push_back(p.still_wanted());
      }
      --pending;
      // Called even when the client left: the front end must check for itself.
      if (mode == BetaMode::kLoadFailed) {
        p.done(nullptr, proto::make_error(proto::WireError::kModelLoadFailed, "beta.gguf: not a GGUF file"));
      } else if (mode == BetaMode::kOverloaded) {
        p.done(nullptr, proto::make_error(proto::WireError::kOverloaded, "every loaded model is busy"));
      } else {
        p.done(beta_, proto::ProtocolError{});
      }
      ++completed;
    }
  }

  HttpFrontend::Backend backend() {
    HttpFrontend::Backend b;
    b.models = [this] {
      HttpModelStatus a;
      a.entry = *alpha_;
      a.loaded = true;
      a.resident_bytes = 4096;
      a.expires_in_ms = 60'000;
      HttpModelStatus be;
      be.entry = header_only(*beta_);
      return std::vector<HttpModelStatus>{a, be};
    };
    b.resolve_model = [this](const std::string& name, std::optional<double> keep_alive, std::function<bool()> still_wanted,
                             HttpFrontend::Backend::ResolvedModel done) {
      {
        std::lock_guard lock(mu_);
        resolves_.push_back({name, keep_alive});
      }
      if (alpha_->matches(name)) return done(alpha_, proto::ProtocolError{});  // loaded: at once
      if (beta_->matches(name)) {
        ++pending;
        pending_.push_back({std::chrono::steady_clock::now(), std::move(still_wanted), std::move(done)});
        return;
      }
      done(nullptr, proto::make_error(proto::WireError::kNotFound,
                                      "model '" + name + "' not found; this server serves 'alpha', 'beta'", "model"));
    };
    b.find_model = [this](const std::string& name, HttpModelStatus& found, proto::ProtocolError& error) {
      if (alpha_->matches(name) || beta_->matches(name)) {
        found.entry = alpha_->matches(name) ? *alpha_ : header_only(*beta_);
        found.loaded = alpha_->matches(name);
        return true;
      }
      error = proto::make_error(proto::WireError::kNotFound,
                                "model '" + name + "' not found; this server serves 'alpha', 'beta'", "model");
      return false;
    };
    b.unload = [this](const std::string& name) {
      std::lock_guard lock(mu_);
      unloads_.push_back(name);
      return true;
    };
    auto finish = [this](const std::string& id, bool embed) {
      if (embed) {
        proto::EmbedAnswer answer;
        answer.id = id;
        answer.embeddings = {{1.0F, 0.0F}};
        return frontend_->on_embed_result(id, answer);
      }
      proto::StreamEvent ev;
      ev.id = id;
      ev.type = proto::StreamEventType::kFinished;
      ev.reason = proto::FinishReason::kStop;
      frontend_->on_event(ev);
    };
    auto record = [this](std::string kind, const std::string& model, std::optional<double> keep_alive) {
      std::lock_guard lock(mu_);
      submitted_.push_back({std::move(kind), model, keep_alive});
      return "req" + std::to_string(submitted_.size());
    };
    // Submitted, then finished at once: the answer names the model it went to.
    b.submit = [record, finish](uint64_t, proto::GenerateMessage m, std::function<bool()>,
                                std::function<void(server::HttpSubmitOutcome)> done) {
      server::HttpSubmitOutcome ok{true, record("generate", m.model, m.keep_alive), 1, {}, 0, nullptr, nullptr};
      done(ok);
      finish(ok.id, false);
    };
    b.submit_chat = [record, finish](uint64_t, proto::ChatRequest m, std::shared_ptr<const server::RenderedChat>,
                                     std::function<bool()>, std::function<void(server::HttpSubmitOutcome)> done) {
      server::HttpSubmitOutcome ok{true, record("chat", m.generate.model, m.generate.keep_alive), 1, {}, 0, nullptr, nullptr};
      done(ok);
      finish(ok.id, false);
    };
    b.submit_embed = [record, finish](uint64_t, proto::EmbedRequest m, std::function<bool()>,
                                      std::function<void(server::HttpSubmitOutcome)> done) {
      server::HttpSubmitOutcome ok{true, record("embed", m.model, m.keep_alive), 1, {}, 0, nullptr, nullptr};
      done(ok);
      finish(ok.id, true);
    };
    b.with_model = [record](uint64_t, const std::string& model_id, HttpFrontend::Backend::ModelWork, bool,
                            std::function<bool()>, std::function<void(json, std::exception_ptr)> done) {
      record("work", model_id, std::nullopt);
      done(json{{"worked_on", model_id}}, nullptr);
    };
    b.connection_closed = [this](uint64_t) { ++closed; };
    return b;
  }

  std::shared_ptr<const http::ModelCatalogue> alpha_ = std::make_shared<const http::ModelCatalogue>(entry("alpha", 8));
  std::shared_ptr<const http::ModelCatalogue> beta_ = std::make_shared<const http::ModelCatalogue>(entry("beta", 16));
  uv_loop_t loop_{};
  uv_async_t stop_{};
  uv_timer_t timer_{};
  std::unique_ptr<HttpFrontend> frontend_;
  std::vector<Pending> pending_;  // loop thread only
  std::mutex mu_;
  std::vector<Submitted> submitted_;
  std::vector<Resolve> resolves_;
  std::vector<std::string> unloads_;
  std::vector<bool> still_wanted_;
  std::thread thread_;
  uint16_t port_ = 0;
};

json body_of(const RawResponse& r) { return json::parse(r.body, nullptr, false); }

// Ollama's error shape {"error": "..."} or OpenAI's {"error": {"message": ...}}: the text.
std::string error_text(const RawResponse& r) {
  const json b = body_of(r);
  if (!b.is_object() || !b.contains("error")) return {};
  return b["error"].is_string() ? b["error"].get<std::string>() : b["error"].value("message", "");
}

struct Case {
  const char* path;
  std::string body;
  const char* kind;
  const char* model;
  std::optional<double> keep_alive;
};

TEST(HttpFrontendModels, EachApiRoutesItsModelToTheWire) {
  FakeServer s;
  const std::string chat = R"("messages":[{"role":"user","content":"hi"}])";
  const std::vector<Case> cases = {
      {"/v1/completions", R"({"model":"beta","prompt":"hi"})", "generate", "beta", std::nullopt},
      {"/v1/completions", R"({"prompt":"hi"})", "generate", "alpha", std::nullopt},  // no model: the default
      {"/v1/chat/completions", R"({"model":"beta",)" + chat + "}", "chat", "beta", std::nullopt},
      {"/v1/chat/completions", R"({"model":"alpha",)" + chat + "}", "chat", "alpha", std::nullopt},
      {"/api/generate", R"({"model":"beta:latest","prompt":"hi","stream":false,"keep_alive":"5m"})", "generate", "beta",
       300.0},
      {"/api/chat", R"({"model":"beta","stream":false,"keep_alive":-1,)" + chat + "}", "chat", "beta", -1.0},
      {"/api/chat", R"({"model":"alpha","stream":false,)" + chat + "}", "chat", "alpha", std::nullopt},
      {"/v1/messages", R"({"model":"beta","max_tokens":4,)" + chat + "}", "chat", "beta", std::nullopt},
      {"/v1/responses", R"({"model":"beta","input":"hi"})", "chat", "beta", std::nullopt},
      {"/v1/embeddings", R"({"model":"beta","input":"hi"})", "embed", "beta", std::nullopt},
      {"/api/embed", R"({"model":"beta","input":"hi","keep_alive":"10s"})", "embed", "beta", 10.0},
      {"/api/embeddings", R"({"model":"beta","prompt":"hi","keep_alive":0})", "embed", "beta", 0.0},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    auto r = s.call("POST", k.path, k.body);
    ASSERT_TRUE(r) << k.path;
    EXPECT_EQ(r->status, 200) << k.path << " " << r->body;
    const std::vector<Submitted> got = s.submitted();
    ASSERT_EQ(got.size(), i + 1) << k.path;
    EXPECT_EQ(got.back().kind, k.kind) << k.path;
    EXPECT_EQ(got.back().model, k.model) << k.path << " " << k.body;
    EXPECT_EQ(got.back().keep_alive, k.keep_alive) << k.path << " " << k.body;
    const json b = body_of(*r);
    if (b.contains("model")) {  // the answer names the model it ran on
      EXPECT_EQ(b["model"], k.model) << k.path;
    }
  }
  // Ollama's durations include the load: the request waited kLoadMs for beta, not for alpha.
  auto loaded_late = s.call("POST", "/api/generate", R"({"model":"beta","prompt":"hi","stream":false})");
  ASSERT_TRUE(loaded_late);
  const json late = body_of(*loaded_late);
  EXPECT_GE(late.value("load_duration", int64_t{0}), int64_t{kLoadMs} * 1'000'000) << loaded_late->body;
  EXPECT_GE(late.value("total_duration", int64_t{0}), late.value("load_duration", int64_t{0}));
  auto embedded = s.call("POST", "/api/embed", R"({"model":"beta","input":"hi"})");
  ASSERT_TRUE(embedded);
  EXPECT_GE(body_of(*embedded).value("load_duration", int64_t{0}), int64_t{kLoadMs} * 1'000'000) << embedded->body;
  auto at_once = s.call("POST", "/api/generate", R"({"model":"alpha","prompt":"hi","stream":false})");
  ASSERT_TRUE(at_once);
  EXPECT_LT(body_of(*at_once).value("load_duration", int64_t{-1}), int64_t{kLoadMs} * 1'000'000) << at_once->body;
  EXPECT_GE(body_of(*at_once).value("load_duration", int64_t{-1}), 0);

  // The name as the client wrote it went to resolve_model, keep_alive with it.
  const std::vector<Resolve> resolves = s.resolves();
  ASSERT_EQ(resolves.size(), cases.size() + 3);
  EXPECT_EQ(resolves[1].name, "");
  EXPECT_EQ(resolves[4].name, "beta:latest");
  EXPECT_EQ(resolves[4].keep_alive, 300.0);
}

TEST(HttpFrontendModels, TokenWorkRunsOnTheNamedModel) {
  FakeServer s;
  const std::string chat = R"("messages":[{"role":"user","content":"hi"}])";
  const std::vector<std::pair<const char*, std::string>> calls = {
      {"/tokenize", R"({"model":"beta","content":"hi"})"},
      {"/detokenize", R"({"model":"beta","tokens":[1,2]})"},
      {"/apply-template", R"({"model":"beta",)" + chat + "}"},
      {"/v1/messages/count_tokens", R"({"model":"beta",)" + chat + "}"},
      {"/tokenize", R"({"content":"hi"})"},
  };
  for (const auto& [path, body] : calls) {
    auto r = s.call("POST", path, body);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path << " " << r->body;
    const std::string expected = body.find("beta") != std::string::npos ? "beta" : "alpha";
    EXPECT_EQ(body_of(*r).value("worked_on", ""), expected) << path;
    EXPECT_EQ(s.submitted().back().model, expected) << path;
  }
}

TEST(HttpFrontendModels, UnknownModelIs404ListingTheServedNames) {
  FakeServer s;
  for (const auto& [path, body, ollama] : std::vector<std::tuple<const char*, const char*, bool>>{
           {"/v1/chat/completions", R"({"model":"gamma","messages":[{"role":"user","content":"x"}]})", false},
           {"/api/generate", R"({"model":"gamma","prompt":"x"})", true},
           {"/v1/embeddings", R"({"model":"gamma","input":"x"})", false},
           {"/api/generate", R"({"model":"gamma","keep_alive":0})", true},  // unload of an unknown model
           {"/tokenize", R"({"model":"gamma","content":"x"})", false}}) {
    auto r = s.call("POST", path, body);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path << " " << body;
    const std::string text = error_text(*r);
    EXPECT_NE(text.find("gamma"), std::string::npos) << text;
    EXPECT_NE(text.find("'alpha'"), std::string::npos) << text;
    EXPECT_NE(text.find("'beta'"), std::string::npos) << text;
    if (ollama) {
      EXPECT_TRUE(body_of(*r)["error"].is_string()) << r->body;  // Ollama's error shape
    } else {
      EXPECT_EQ(body_of(*r)["error"].value("code", ""), "model_not_found") << r->body;
    }
  }
  EXPECT_TRUE(s.submitted().empty());
  EXPECT_TRUE(s.unloads().empty());
}

TEST(HttpFrontendModels, ResolveErrorsAreAnsweredInEachApisShape) {
  FakeServer s;
  s.beta_mode = BetaMode::kLoadFailed;
  auto failed = s.call("POST", "/v1/chat/completions", R"({"model":"beta","messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 500);
  EXPECT_EQ(body_of(*failed)["error"].value("code", ""), "model_load_failed") << failed->body;
  EXPECT_NE(error_text(*failed).find("not a GGUF file"), std::string::npos);
  auto failed_ollama = s.call("POST", "/api/generate", R"({"model":"beta","prompt":"x"})");
  ASSERT_TRUE(failed_ollama);
  EXPECT_EQ(failed_ollama->status, 500);
  EXPECT_TRUE(body_of(*failed_ollama)["error"].is_string()) << failed_ollama->body;

  s.beta_mode = BetaMode::kOverloaded;
  auto busy = s.call("POST", "/api/chat", R"({"model":"beta","messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 429);
  ASSERT_NE(busy->header("retry-after"), nullptr);
  EXPECT_GE(std::stoi(*busy->header("retry-after")), 1);
  auto busy_openai = s.call("POST", "/v1/completions", R"({"model":"beta","prompt":"x"})");
  ASSERT_TRUE(busy_openai);
  EXPECT_EQ(busy_openai->status, 429);
  EXPECT_EQ(body_of(*busy_openai)["error"].value("code", ""), "overloaded") << busy_openai->body;
  EXPECT_TRUE(s.submitted().empty());
}

TEST(HttpFrontendModels, ListingsShowEveryModelAndPsOnlyTheLoaded) {
  FakeServer s;
  auto ps = s.call("GET", "/api/ps");
  ASSERT_TRUE(ps);
  ASSERT_EQ(ps->status, 200);
  const json loaded = body_of(*ps)["models"];
  ASSERT_EQ(loaded.size(), 1U) << ps->body;
  EXPECT_EQ(loaded[0]["name"], "alpha:latest");
  EXPECT_EQ(loaded[0]["model"], "alpha:latest");
  EXPECT_EQ(loaded[0]["size"], 4096);
  EXPECT_EQ(loaded[0]["size_vram"], 4096);  // on the device
  EXPECT_EQ(loaded[0]["digest"], std::string(64, 'a'));
  EXPECT_EQ(loaded[0]["details"]["family"], "llama");
  const std::string expires = loaded[0]["expires_at"];  // in a minute, RFC 3339
  EXPECT_EQ(expires.size(), std::string("2026-11-25T04:40:00.123456789Z").size()) << expires;
  EXPECT_EQ(expires.back(), 'Z');
  EXPECT_GT(expires, http::rfc3339_now());

  auto tags = s.call("GET", "/api/tags");
  ASSERT_TRUE(tags);
  const json all = body_of(*tags)["models"];
  ASSERT_EQ(all.size(), 2U) << tags->body;
  EXPECT_EQ(all[0]["name"], "alpha:latest");
  EXPECT_EQ(all[1]["name"], "beta:latest");

  auto models = s.call("GET", "/v1/models");
  ASSERT_TRUE(models);
  const json data = body_of(*models)["data"];
  ASSERT_EQ(data.size(), 2U) << models->body;
  EXPECT_EQ(data[0]["id"], "alpha");
  EXPECT_EQ(data[1]["id"], "beta");

  auto one = s.call("GET", "/v1/models/beta");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  EXPECT_EQ(body_of(*one)["id"], "beta");
  auto none = s.call("GET", "/v1/models/gamma");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
  EXPECT_NE(error_text(*none).find("'beta'"), std::string::npos);

  // Show answers a model that is not loaded from its header fields, loading nothing.
  auto show = s.call("POST", "/api/show", R"({"model":"beta"})");
  ASSERT_TRUE(show);
  EXPECT_EQ(show->status, 200) << show->body;
  EXPECT_EQ(body_of(*show)["details"]["quantization_level"], "Q4_0");
  EXPECT_EQ(body_of(*show)["details"]["parameter_size"], "");  // its header gave no shapes: unknown, not "0K"
  EXPECT_TRUE(s.resolves().empty());
  auto show_none = s.call("POST", "/api/show", R"({"name":"gamma"})");
  ASSERT_TRUE(show_none);
  EXPECT_EQ(show_none->status, 404);

  auto health = s.call("GET", "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(body_of(*health)["model"], "alpha");  // the default
}

TEST(HttpFrontendModels, BadKeepAliveIs400NamingIt) {
  FakeServer s;
  for (const char* body : {R"({"model":"beta","prompt":"x","keep_alive":"5 minutes"})",
                           R"({"model":"beta","prompt":"x","keep_alive":true})",
                           R"({"model":"beta","keep_alive":"1d"})"}) {
    auto r = s.call("POST", "/api/generate", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << body;
    EXPECT_NE(error_text(*r).find("keep_alive"), std::string::npos) << r->body;
  }
  auto embed = s.call("POST", "/api/embed", R"({"model":"beta","input":"x","keep_alive":[1]})");
  ASSERT_TRUE(embed);
  EXPECT_EQ(embed->status, 400);
  EXPECT_TRUE(s.resolves().empty());  // refused before any load
  EXPECT_TRUE(s.unloads().empty());
}

TEST(HttpFrontendModels, EmptyPromptLoadsAndKeepAliveZeroUnloads) {
  FakeServer s;
  auto load = s.call("POST", "/api/generate", R"({"model":"beta","keep_alive":-1})");
  ASSERT_TRUE(load);
  EXPECT_EQ(load->status, 200) << load->body;
  EXPECT_EQ(body_of(*load)["done_reason"], "load");
  EXPECT_EQ(body_of(*load)["model"], "beta");
  ASSERT_EQ(s.resolves().size(), 1U);  // resolving is what loads it
  EXPECT_EQ(s.resolves()[0].name, "beta");
  EXPECT_EQ(s.resolves()[0].keep_alive, -1.0);

  auto unload = s.call("POST", "/api/generate", R"({"model":"beta","keep_alive":0})");
  ASSERT_TRUE(unload);
  EXPECT_EQ(unload->status, 200) << unload->body;
  EXPECT_EQ(body_of(*unload)["done_reason"], "unload");
  EXPECT_EQ(body_of(*unload)["response"], "");
  EXPECT_EQ(body_of(*unload)["done"], true);
  ASSERT_EQ(s.unloads().size(), 1U);
  EXPECT_EQ(s.unloads()[0], "beta");
  EXPECT_EQ(s.resolves().size(), 1U);  // an unload loads nothing

  auto chat_unload = s.call("POST", "/api/chat", R"({"model":"alpha:latest","messages":[],"keep_alive":"0"})");
  ASSERT_TRUE(chat_unload);
  EXPECT_EQ(chat_unload->status, 200) << chat_unload->body;
  EXPECT_EQ(body_of(*chat_unload)["done_reason"], "unload");
  EXPECT_EQ(body_of(*chat_unload)["message"]["role"], "assistant");
  ASSERT_EQ(s.unloads().size(), 2U);
  EXPECT_EQ(s.unloads()[1], "alpha");

  auto chat_load = s.call("POST", "/api/chat", R"({"model":"alpha"})");
  ASSERT_TRUE(chat_load);
  EXPECT_EQ(body_of(*chat_load)["done_reason"], "load");
  EXPECT_EQ(s.unloads().size(), 2U);
  EXPECT_TRUE(s.submitted().empty());  // neither generated anything
}

TEST(HttpFrontendModels, ClientLeavingWhileItsModelLoadsGetsNothingSubmitted) {
  FakeServer s;
  s.beta_mode = BetaMode::kHold;
  {
    RawHttpClient c;
    ASSERT_TRUE(c.connect_tcp(s.port()));
    ASSERT_TRUE(c.send(http_request("POST", "/api/generate", R"({"model":"beta","prompt":"x","stream":false})")));
    ASSERT_TRUE(eventually([&] { return s.pending.load() == 1; }));
    c.close();
  }
  ASSERT_TRUE(eventually([&] { return s.closed.load() == 1; }));
  s.release = true;  // the load finishes after the client left; the fake answers it anyway
  ASSERT_TRUE(eventually([&] { return s.completed.load() == 1; }));
  ASSERT_EQ(s.still_wanted_at_completion().size(), 1U);
  EXPECT_FALSE(s.still_wanted_at_completion()[0]);
  // A request on a fresh connection still goes through (the front end is not stuck).
  auto later = s.call("POST", "/api/generate", R"({"model":"beta","prompt":"x","stream":false})");
  ASSERT_TRUE(later);
  EXPECT_EQ(later->status, 200) << later->body;
  const std::vector<Submitted> got = s.submitted();
  ASSERT_EQ(got.size(), 1U);  // only the later one
}

}  // namespace
}  // namespace vks::test
