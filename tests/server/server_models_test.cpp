// End to end, real daemon serving a models folder (issue 33): two models stream at the same time and
// each gives what it gives alone; the least recently used idle model is evicted at
// --max-loaded-models; keep_alive 0 unloads; a corrupt file fails with model_load_failed while the
// others serve; unknown names are listed; a pinned --model is never evicted; load/unload requests;
// a client's answers keep their order while its model loads.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "tests/server/daemon_harness.h"
#include "tests/common/test_models.h"


namespace vks::test {
namespace {

using Clock = std::chrono::steady_clock;

// The direct answer of type T to `req`, or null (an error answer, another type, no answer).
template <class T>
std::optional<T> answer_of(UdsClient& c, const proto::Request& req) {
  const std::optional<proto::ServerMessage> m = request(c, req, 60000);
  const T* a = m ? std::get_if<T>(&m->body) : nullptr;
  return a != nullptr ? std::optional<T>(*a) : std::nullopt;
}

// The error code a request is answered with ("" when it is not an error).
std::string error_code_of(UdsClient& c, const proto::Request& req) {
  const std::optional<proto::ErrorAnswer> e = answer_of<proto::ErrorAnswer>(c, req);
  return e ? std::string(proto::wire_error_name(e->error.code)) : std::string();
}

// name -> loaded, from a `models` answer.
std::map<std::string, bool> loaded_models(UdsClient& c) {
  std::map<std::string, bool> out;
  if (const auto a = answer_of<proto::ModelsAnswer>(c, simple(proto::ModelsRequest{}))) {
    for (const proto::ServableModelEntry& e : a->models) out[e.name] = e.loaded;
  }
  return out;
}

proto::Request greedy_on(const std::string& model, int32_t max_tokens = 40, std::optional<double> keep_alive = {}) {
  proto::Request r = greedy_request(max_tokens, /*ignore_eos=*/true);
  auto& g = std::get<proto::GenerateRequest>(r.body);
  g.model = model;
  g.keep_alive = keep_alive;
  return r;
}

struct Generated {
  std::string model;  // the accepted answer's
  std::vector<TokenId> ids;
  std::optional<proto::ProtocolError> error;
};

// Sends a greedy generate and collects its stream (or its error).
Generated generate_on(UdsClient& c, const std::string& model, int32_t max_tokens = 40, std::optional<double> keep_alive = {}) {
  Generated out;
  const auto m = request(c, greedy_on(model, max_tokens, keep_alive), 60000);
  if (!m) {
    out.error = proto::make_error(proto::WireError::kInternal, "no answer");
    return out;
  }
  if (const auto* e = std::get_if<proto::ErrorAnswer>(&m->body)) {
    out.error = e->error;
    return out;
  }
  const auto* a = std::get_if<proto::AcceptedAnswer>(&m->body);
  if (a == nullptr) {
    out.error = proto::make_error(proto::WireError::kInternal, "not accepted");
    return out;
  }
  out.model = a->model;
  StreamCollector s{a->id};
  if (!collect(c, s, 60000)) out.error = proto::make_error(proto::WireError::kInternal, "stream incomplete");
  out.ids = s.ids();
  return out;
}

class ServerModelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_dir_ = dir_.path + "/models";
    std::filesystem::create_directories(models_dir_);
    for (const char* name : {"stories260K.gguf", "aidreams260K.gguf", "kquant-q4_k_m.gguf"}) {
      std::filesystem::create_symlink(model_path(name), models_dir_ + "/" + name);
    }
    // A GGUF cut short: its header promises more than the file holds.
    std::ifstream in(model_path("stories260K.gguf"), std::ios::binary);
    std::string head(6000, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(models_dir_ + "/corrupt.gguf", std::ios::binary).write(head.data(), in.gcount());
  }
  void TearDown() override {
    if (daemon_.running()) {
      daemon_.signal(SIGTERM);
      EXPECT_EQ(daemon_.wait_exit(20), 0) << daemon_.log();
    }
  }
  void start(std::vector<std::string> extra, bool pinned = false) {
    DaemonConfig config;
    config.dir = dir_.path;
    config.with_model = pinned;
    config.extra_args = {"--models-dir", models_dir_, "--no-model-cache", "--log-level", "debug"};
    config.extra_args.insert(config.extra_args.end(), extra.begin(), extra.end());
    daemon_.start(config);
    ASSERT_TRUE(daemon_.wait_ready(60)) << daemon_.log();
  }
  bool connect(UdsClient& c) { return c.connect(daemon_.socket_path()); }

  TempDir dir_;
  std::string models_dir_;
  DaemonProcess daemon_;
};

// What aidreams260K generates served alone by its own daemon (it has no reference file).
std::vector<TokenId> aidreams_alone() {
  TempDir dir;
  DaemonProcess d;
  DaemonConfig config;
  config.dir = dir.path;
  config.with_model = false;
  config.extra_args = {"--model", model_path("aidreams260K.gguf")};
  d.start(config);
  if (!d.wait_ready(60)) return {};
  UdsClient c;
  if (!c.connect(d.socket_path())) return {};
  Generated g = generate_on(c, "", 40);
  d.signal(SIGTERM);
  d.wait_exit(20);
  return g.error ? std::vector<TokenId>{} : g.ids;
}

TEST_F(ServerModelsTest, TwoModelsStreamAtOnceEachAsAlone) {
  const std::vector<TokenId> aidreams_ref = aidreams_alone();
  ASSERT_EQ(aidreams_ref.size(), 40u);
  start({});
  UdsClient a;
  UdsClient b;
  ASSERT_TRUE(connect(a));
  ASSERT_TRUE(connect(b));
  // Both submitted before either stream is read: they load and run side by side.
  ASSERT_TRUE(a.send(greedy_on("stories260K", 60)));
  ASSERT_TRUE(b.send(greedy_on("aidreams260K", 40)));
  auto accepted = [](UdsClient& c) -> std::optional<proto::AcceptedAnswer> {
    for (int i = 0; i < 8; ++i) {
      auto m = c.recv(60000);
      if (!m) return std::nullopt;
      if (const auto* acc = std::get_if<proto::AcceptedAnswer>(&m->body)) return *acc;
      if (std::holds_alternative<proto::ErrorAnswer>(m->body)) return std::nullopt;
    }
    return std::nullopt;
  };
  const auto acc_a = accepted(a);
  const auto acc_b = accepted(b);
  ASSERT_TRUE(acc_a && acc_b) << daemon_.log();
  EXPECT_EQ(acc_a->model, "stories260K");
  EXPECT_EQ(acc_b->model, "aidreams260K");
  StreamCollector sa{acc_a->id};
  StreamCollector sb{acc_b->id};
  ASSERT_TRUE(collect(a, sa, 60000));
  ASSERT_TRUE(collect(b, sb, 60000));
  // The two references differ, so the two checks below tell the models apart (one model answering
  // both streams would fail one of them).
  const std::vector<TokenId> stories_ref = reference_generated_ids();
  ASSERT_GE(stories_ref.size(), aidreams_ref.size());
  ASSERT_NE(std::vector<TokenId>(stories_ref.begin(), stories_ref.begin() + static_cast<ptrdiff_t>(aidreams_ref.size())),
            aidreams_ref);
  EXPECT_EQ(sa.ids(), stories_ref);
  EXPECT_EQ(sb.ids(), aidreams_ref);
}

TEST_F(ServerModelsTest, LeastRecentlyUsedIdleModelIsEvicted) {
  start({"--max-loaded-models", "2"});
  UdsClient c;
  ASSERT_TRUE(connect(c));
  EXPECT_FALSE(generate_on(c, "stories260K", 4).error);
  const Generated before = generate_on(c, "aidreams260K", 20);  // what it gives before its eviction
  ASSERT_FALSE(before.error);
  ASSERT_EQ(before.ids.size(), 20u);
  EXPECT_FALSE(generate_on(c, "stories260K", 4).error);  // aidreams260K is now the least recently used
  const Generated k = generate_on(c, "kquant-q4_k_m", 4);
  EXPECT_FALSE(k.error) << k.error->message;
  const auto loaded = loaded_models(c);
  EXPECT_TRUE(loaded.at("stories260K"));
  EXPECT_TRUE(loaded.at("kquant-q4_k_m"));
  EXPECT_FALSE(loaded.at("aidreams260K"));
  EXPECT_FALSE(loaded.at("corrupt"));
  // An evicted model comes back on demand, with the output it gave before.
  const Generated again = generate_on(c, "aidreams260K", 20);
  EXPECT_FALSE(again.error);
  EXPECT_EQ(again.ids, before.ids);
}

TEST_F(ServerModelsTest, KeepAliveZeroUnloadsOnceIdle) {
  start({});
  UdsClient c;
  ASSERT_TRUE(connect(c));
  EXPECT_FALSE(generate_on(c, "aidreams260K", 8).error);
  EXPECT_TRUE(loaded_models(c).at("aidreams260K"));
  EXPECT_FALSE(generate_on(c, "aidreams260K", 8, 0.0).error);
  bool unloaded = false;
  for (int i = 0; i < 100 && !unloaded; ++i) {  // unloaded when its finished event is handled
    unloaded = !loaded_models(c).at("aidreams260K");
    if (!unloaded) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(unloaded) << daemon_.log();
  // A short keep_alive expires by itself too (the housekeeping timer; no check that it is loaded in
  // between: 0.2 s may be over before a `models` answer comes, on a loaded machine).
  EXPECT_FALSE(generate_on(c, "stories260K", 4, 0.2).error);
  bool expired = false;
  for (int i = 0; i < 100 && !expired; ++i) {
    expired = !loaded_models(c).at("stories260K");
    if (!expired) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(expired) << daemon_.log();
  EXPECT_NE(daemon_.log().find("unloading model stories260K: keep_alive ran out"), std::string::npos) << daemon_.log();
}

TEST_F(ServerModelsTest, CorruptModelFailsClearlyWhileTheOthersServe) {
  start({});
  UdsClient c;
  ASSERT_TRUE(connect(c));
  const Generated bad = generate_on(c, "corrupt", 4);
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(bad.error->code, proto::WireError::kModelLoadFailed);
  EXPECT_EQ(bad.error->field, "model");
  EXPECT_NE(bad.error->message.find("corrupt"), std::string::npos) << bad.error->message;
  EXPECT_NE(bad.error->message.find("truncated"), std::string::npos) << bad.error->message;
  const Generated good = generate_on(c, "stories260K", 60);
  EXPECT_FALSE(good.error);
  EXPECT_EQ(good.ids, reference_generated_ids());
  EXPECT_TRUE(daemon_.running());
}

TEST_F(ServerModelsTest, UnknownNamesAreAnsweredWithTheServedNames) {
  start({});
  UdsClient c;
  ASSERT_TRUE(connect(c));
  const Generated unknown = generate_on(c, "no-such-model", 4);
  ASSERT_TRUE(unknown.error);
  EXPECT_EQ(unknown.error->code, proto::WireError::kNotFound);
  for (const char* name : {"stories260K", "aidreams260K", "kquant-q4_k_m", "corrupt"}) {
    EXPECT_NE(unknown.error->message.find(name), std::string::npos) << unknown.error->message;
  }
  // Several models and no --model: a request must name one.
  const Generated unnamed = generate_on(c, "", 4);
  ASSERT_TRUE(unnamed.error);
  EXPECT_EQ(unnamed.error->code, proto::WireError::kNotFound);
  // The file name and "name:latest" name the same model.
  EXPECT_EQ(generate_on(c, "stories260K.gguf", 60).ids, reference_generated_ids());
  EXPECT_EQ(generate_on(c, "stories260K:latest", 60).model, "stories260K");
}

TEST_F(ServerModelsTest, PinnedModelIsTheDefaultAndIsNeverEvicted) {
  start({"--max-loaded-models", "2"}, /*pinned=*/true);
  UdsClient c;
  ASSERT_TRUE(connect(c));
  EXPECT_EQ(generate_on(c, "", 60).ids, reference_generated_ids());
  EXPECT_FALSE(generate_on(c, "aidreams260K", 4).error);
  EXPECT_FALSE(generate_on(c, "kquant-q4_k_m", 4).error);  // evicts aidreams260K, never the pinned model
  const auto loaded = loaded_models(c);
  EXPECT_TRUE(loaded.at("stories260K"));
  EXPECT_TRUE(loaded.at("kquant-q4_k_m"));
  EXPECT_FALSE(loaded.at("aidreams260K"));
  EXPECT_EQ(error_code_of(c, simple(proto::UnloadRequest{"stories260K"})), "unsupported");
}

// /metrics and the prometheus stats: one sample per servable model under its label.
TEST_F(ServerModelsTest, MetricsCarryEveryModelUnderItsLabel) {
  start({});
  UdsClient c;
  ASSERT_TRUE(connect(c));
  EXPECT_FALSE(generate_on(c, "aidreams260K", 6).error);
  proto::StatsRequest stats;
  stats.format = proto::StatsFormat::kPrometheus;
  const auto m = request(c, simple(stats), 10000);
  ASSERT_TRUE(m);
  const auto* a = std::get_if<proto::StatsAnswer>(&m->body);
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->text.find("vkstream_model_loaded{model=\"aidreams260K\"} 1\n"), std::string::npos) << a->text;
  EXPECT_NE(a->text.find("vkstream_model_loaded{model=\"stories260K\"} 0\n"), std::string::npos) << a->text;
  EXPECT_NE(a->text.find("vkstream_model_generated_tokens_total{model=\"aidreams260K\"} 6\n"), std::string::npos)
      << a->text;
  // Inter-token latency per model: the gaps between aidreams260K's token events, none for stories260K.
  auto itl_count = [&](const std::string& model) -> long {
    const std::string key = "vkstream_model_itl_seconds_count{model=\"" + model + "\"} ";
    const size_t at = a->text.find(key);
    return at == std::string::npos ? -1 : std::stol(a->text.substr(at + key.size()));
  };
  EXPECT_GE(itl_count("aidreams260K"), 1) << a->text;
  EXPECT_EQ(itl_count("stories260K"), 0) << a->text;
}

TEST_F(ServerModelsTest, LoadAndUnloadRequests) {
  start({});
  UdsClient c;
  ASSERT_TRUE(connect(c));
  const auto loaded = answer_of<proto::LoadedAnswer>(c, simple(proto::LoadRequest{"aidreams260K", std::nullopt}));
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->model, "aidreams260K");
  EXPECT_GT(loaded->load_ms, 0.0);
  EXPECT_TRUE(loaded_models(c).at("aidreams260K"));
  const auto unloaded = answer_of<proto::UnloadedAnswer>(c, simple(proto::UnloadRequest{"aidreams260K"}));
  ASSERT_TRUE(unloaded);
  EXPECT_EQ(unloaded->model, "aidreams260K");
  EXPECT_TRUE(unloaded->was_loaded);
  EXPECT_FALSE(loaded_models(c).at("aidreams260K"));
  EXPECT_EQ(error_code_of(c, simple(proto::LoadRequest{"corrupt", std::nullopt})), "model_load_failed");
}

// The first request of a model that is not loaded waits for the load: its finished event says so
// (load_ms, counted in ttft_ms and total_ms); the next one does not wait. Queued and finished
// events name the model.
TEST_F(ServerModelsTest, TheLoadIsInTheTimingsOfTheRequestsThatWaitedForIt) {
  start({});
  UdsClient c;
  ASSERT_TRUE(connect(c));
  auto finished_of = [&](const std::string& model) -> std::optional<proto::StreamEvent> {
    const auto m = request(c, greedy_on(model, 4), 60000);
    const auto* a = m ? std::get_if<proto::AcceptedAnswer>(&m->body) : nullptr;
    if (a == nullptr) return std::nullopt;
    StreamCollector s{a->id};
    if (!collect(c, s, 60000)) return std::nullopt;
    std::optional<proto::StreamEvent> finished;
    for (const auto& ev : s.by_seq) {
      if (!ev) continue;
      if (ev->type == proto::StreamEventType::kQueued) {
        EXPECT_EQ(ev->model, model);
      }
      if (ev->type == proto::StreamEventType::kFinished) finished = *ev;
    }
    return finished;
  };
  const auto first = finished_of("aidreams260K");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->model, "aidreams260K");
  EXPECT_GT(first->timings.load_ms, 0.0);
  EXPECT_GE(first->timings.ttft_ms, first->timings.load_ms);
  const auto second = finished_of("aidreams260K");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->timings.load_ms, 0.0);
}

// With --idle-exit the daemon stays while a model is loaded (its keep_alive running), and exits
// once nothing is loaded and nothing is connected.
TEST_F(ServerModelsTest, IdleExitWaitsForTheLoadedModelsToGo) {
  start({"--idle-exit", "0.3"});
  {
    UdsClient c;
    ASSERT_TRUE(connect(c));
    EXPECT_FALSE(generate_on(c, "aidreams260K", 4, 1.5).error);  // loaded for 1.5 s more
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  EXPECT_TRUE(daemon_.running()) << "exited while a model was loaded:\n" << daemon_.log();
  EXPECT_EQ(daemon_.wait_exit(20), 0) << daemon_.log();
  EXPECT_NE(daemon_.log().find("keep_alive ran out"), std::string::npos) << daemon_.log();
}

// Nothing to serve is a startup error that says where models come from.
TEST_F(ServerModelsTest, NoModelAnywhereIsAStartupError) {
  DaemonConfig config;
  config.dir = dir_.path;
  config.with_model = false;
  const std::string empty = dir_.path + "/empty";
  std::filesystem::create_directories(empty);
  config.extra_args = {"--models-dir", empty, "--no-model-cache"};
  daemon_.start(config);
  EXPECT_EQ(daemon_.wait_exit(20), 1);
  EXPECT_NE(daemon_.log().find("no model to serve"), std::string::npos) << daemon_.log();
  EXPECT_NE(daemon_.log().find("--models-dir"), std::string::npos) << daemon_.log();
}

TEST_F(ServerModelsTest, AnswersKeepTheirOrderWhileAModelLoads) {
  start({});
  UdsClient c;
  ASSERT_TRUE(connect(c));
  EXPECT_FALSE(generate_on(c, "stories260K", 4).error);  // loaded
  // A generate whose model must load first, then a tokenize on a loaded model: answered in order.
  proto::Request gen = greedy_on("aidreams260K", 4);
  gen.tag = proto::Tag::of(1);
  proto::TokenizeRequest t;
  t.text = "Once upon a time";
  t.model = "stories260K";
  ASSERT_TRUE(c.send(gen));
  ASSERT_TRUE(c.send(simple(t, 2)));
  std::vector<int64_t> tags;
  for (int i = 0; i < 40 && tags.size() < 2; ++i) {
    auto m = c.recv(60000);
    ASSERT_TRUE(m);
    if (std::holds_alternative<proto::StreamEvent>(m->body)) continue;
    tags.push_back(m->tag.i);
  }
  EXPECT_EQ(tags, (std::vector<int64_t>{1, 2}));
}

}  // namespace
}  // namespace vks::test
