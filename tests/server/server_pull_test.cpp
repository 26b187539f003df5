// End to end, real daemon (issue 33, "getting models from every surface"): msgpack `pull` of a
// Hugging Face name and of a URL from a fake Hugging Face on loopback (tests/clients/
// fake_model_server.py, no network), progress answers, the model generating by its pulled name;
// a sha256 mismatch leaves no file and answers pull_failed; a broken transfer keeps FILE.part and
// the next pull resumes it; a pull does not stall another client's generation; `delete` removes a
// pulled model (and its folders) and refuses --models-dir files, unknown names and a model in use;
// two pulls of one name share one download; a shutdown stops a pull at once.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "tests/clients/process_util.h"
#include "tests/common/test_models.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kRepoName = "test/stories260K-GGUF:F32";

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

struct Pulled {
  std::optional<proto::PulledAnswer> pulled;
  std::optional<proto::ProtocolError> error;
  std::vector<proto::PullProgressAnswer> progress;
  Clock::time_point answered{};
};

// Reads a sent pull's answers (progress, then pulled or error) until the last one.
Pulled read_pull(UdsClient& c, const std::string& model, int64_t tag) {
  Pulled out;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    const std::optional<proto::ServerMessage> m = c.recv(1000);
    if (!m) continue;
    if (const auto* p = std::get_if<proto::PullProgressAnswer>(&m->body)) {
      out.progress.push_back(*p);
      continue;
    }
    if (!(m->tag == proto::Tag::of(tag))) continue;  // not this request's
    out.answered = Clock::now();
    if (const auto* a = std::get_if<proto::PulledAnswer>(&m->body)) out.pulled = *a;
    if (const auto* e = std::get_if<proto::ErrorAnswer>(&m->body)) out.error = e->error;
    return out;
  }
  ADD_FAILURE() << "no answer to pull " << model;
  return out;
}

// Sends a pull and reads its answers.
Pulled pull(UdsClient& c, const std::string& model, bool stream, int64_t tag = 5) {
  EXPECT_TRUE(c.send(simple(proto::PullRequest{model, stream}, tag)));
  return read_pull(c, model, tag);
}

std::optional<proto::ProtocolError> delete_model(UdsClient& c, const std::string& model) {
  const auto m = request(c, simple(proto::DeleteRequest{model}, 6), 30000);
  if (!m) return proto::make_error(proto::WireError::kInternal, "no answer");
  if (const auto* e = std::get_if<proto::ErrorAnswer>(&m->body)) return e->error;
  if (const auto* d = std::get_if<proto::DeletedAnswer>(&m->body); d == nullptr || d->model != model) {
    return proto::make_error(proto::WireError::kInternal, "not a deleted answer for " + model);
  }
  return std::nullopt;
}

std::vector<std::string> served_names(UdsClient& c) {
  std::vector<std::string> names;
  const auto m = request(c, simple(proto::ModelsRequest{}));
  if (const auto* a = m ? std::get_if<proto::ModelsAnswer>(&m->body) : nullptr) {
    for (const proto::ServableModelEntry& e : a->models) names.push_back(e.name);
  }
  return names;
}

bool serves(UdsClient& c, const std::string& name) {
  const std::vector<std::string> names = served_names(c);
  return std::find(names.begin(), names.end(), name) != names.end();
}

struct Generated {
  std::vector<TokenId> ids;
  std::optional<proto::ProtocolError> error;
};

Generated generate_on(UdsClient& c, const std::string& model, int32_t max_tokens = 60) {
  Generated out;
  proto::Request r = greedy_request(max_tokens);
  std::get<proto::GenerateRequest>(r.body).model = model;
  const auto m = request(c, r, 60000);
  if (!m) {
    out.error = proto::make_error(proto::WireError::kInternal, "no answer");
  } else if (const auto* e = std::get_if<proto::ErrorAnswer>(&m->body)) {
    out.error = e->error;
  } else if (const auto* a = std::get_if<proto::AcceptedAnswer>(&m->body)) {
    StreamCollector s{a->id};
    if (!collect(c, s, 60000)) out.error = proto::make_error(proto::WireError::kInternal, "stream incomplete");
    out.ids = s.ids();
  } else {
    out.error = proto::make_error(proto::WireError::kInternal, "not accepted");
  }
  return out;
}

class ServerPullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_dir_ = dir_.path + "/hub/test/stories260K-GGUF";
    fs::create_directories(repo_dir_);
    source_ = read_file(model_path("stories260K.gguf"));
    ASSERT_GT(source_.size(), 100000u);
    write_text(repo_dir_ + "/stories260K.F32.gguf", source_);
    models_dir_ = dir_.path + "/models";
    fs::create_directories(models_dir_);
    fs::create_symlink(model_path("aidreams260K.gguf"), models_dir_ + "/aidreams260K.gguf");
    cache_ = dir_.path + "/cache";
    const std::string port_file = dir_.path + "/port";
    log_ = dir_.path + "/requests.log";
    hub_ = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"/usr/bin/python3", std::string(VKS_SOURCE_DIR) + "/tests/clients/fake_model_server.py",
                                 dir_.path + "/hub", port_file, log_},
        dir_.path + "/hub.out");
    for (int i = 0; i < 200 && !fs::exists(port_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string port = read_file(port_file);
    ASSERT_FALSE(port.empty()) << "fake model server did not start";
    endpoint_ = "http://127.0.0.1:" + port;

    DaemonConfig config;
    config.dir = dir_.path;
    config.with_model = false;
    config.extra_args = {"--models-dir", models_dir_, "--log-level", "debug"};
    config.env = {"VKSTREAM_CACHE_DIR=" + cache_, "VKSTREAM_HF_ENDPOINT=" + endpoint_};
    daemon_.start(config);
    ASSERT_TRUE(daemon_.wait_ready(60)) << daemon_.log();
    ASSERT_TRUE(client_.connect(daemon_.socket_path()));
  }
  void TearDown() override {
    client_.close();
    if (daemon_.running()) {
      daemon_.signal(SIGTERM);
      EXPECT_EQ(daemon_.wait_exit(20), 0) << daemon_.log();
    }
  }
  std::string pulled_path() const { return cache_ + "/test/stories260K-GGUF/stories260K.F32.gguf"; }

  TempDir dir_;
  std::string repo_dir_, models_dir_, cache_, log_, endpoint_, source_;
  std::unique_ptr<BackgroundProcess> hub_;
  DaemonProcess daemon_;
  UdsClient client_;
};

TEST_F(ServerPullTest, PulledModelGeneratesByItsName) {
  EXPECT_FALSE(serves(client_, kRepoName));
  const Pulled p = pull(client_, kRepoName, /*stream=*/true);
  ASSERT_TRUE(p.pulled) << (p.error ? p.error->message : "") << daemon_.log();
  EXPECT_EQ(p.pulled->model, kRepoName);
  EXPECT_EQ(p.pulled->path, pulled_path());
  EXPECT_EQ(p.pulled->size_bytes, source_.size());
  EXPECT_EQ(p.pulled->downloaded_bytes, source_.size());
  EXPECT_EQ(read_file(pulled_path()), source_);
  EXPECT_FALSE(fs::exists(pulled_path() + ".part"));
  // Progress named the request's model and ended complete.
  ASSERT_FALSE(p.progress.empty());
  EXPECT_EQ(p.progress.back().model, kRepoName);
  EXPECT_EQ(p.progress.back().completed, source_.size());
  EXPECT_EQ(p.progress.back().total, source_.size());

  EXPECT_TRUE(serves(client_, kRepoName));
  const Generated g = generate_on(client_, kRepoName);
  ASSERT_FALSE(g.error) << g.error->message;
  EXPECT_EQ(g.ids, reference_generated_ids());

  // Pulled again: verified in place, nothing fetched; no progress asked, none sent.
  const Pulled again = pull(client_, kRepoName, /*stream=*/false);
  ASSERT_TRUE(again.pulled) << (again.error ? again.error->message : "");
  EXPECT_EQ(again.pulled->downloaded_bytes, 0u);
  EXPECT_TRUE(again.progress.empty());

  // A plain URL: the file lands at the cache's top, served by its stem.
  const Pulled url = pull(client_, endpoint_ + "/test/stories260K-GGUF/resolve/main/stories260K.F32.gguf", false);
  ASSERT_TRUE(url.pulled) << (url.error ? url.error->message : "");
  EXPECT_EQ(url.pulled->model, "stories260K.F32");
  EXPECT_EQ(url.pulled->path, cache_ + "/stories260K.F32.gguf");
  EXPECT_EQ(generate_on(client_, "stories260K.F32").ids, reference_generated_ids());
}

TEST_F(ServerPullTest, ChecksumMismatchLeavesNoFileAndAnswersPullFailed) {
  write_text(repo_dir_ + "/stories260K.F32.gguf.fake-sha256", std::string(64, '0'));
  const Pulled p = pull(client_, kRepoName, true);
  ASSERT_TRUE(p.error) << daemon_.log();
  EXPECT_EQ(p.error->code, proto::WireError::kPullFailed) << p.error->message;
  EXPECT_NE(p.error->message.find("sha256"), std::string::npos) << p.error->message;
  EXPECT_FALSE(fs::exists(pulled_path()));
  EXPECT_FALSE(fs::exists(pulled_path() + ".part"));
  EXPECT_FALSE(serves(client_, kRepoName));

  // Names that resolve to nothing answer as `vkstream pull` would, at once or after the listing.
  const Pulled missing = pull(client_, "test/no-such-repo:Q4_K_M", false);
  ASSERT_TRUE(missing.error);
  EXPECT_EQ(missing.error->code, proto::WireError::kNotFound) << missing.error->message;
  const Pulled no_quant = pull(client_, "test/stories260K-GGUF:Q2_K", false);
  ASSERT_TRUE(no_quant.error);
  EXPECT_EQ(no_quant.error->code, proto::WireError::kNotFound);
  EXPECT_NE(no_quant.error->message.find("F32"), std::string::npos) << no_quant.error->message;
  const Pulled bad = pull(client_, "llama3.2:latest", false);
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(bad.error->code, proto::WireError::kInvalidField);
  EXPECT_NE(bad.error->message.find("OWNER/REPO"), std::string::npos) << bad.error->message;
  EXPECT_FALSE(fs::exists(cache_ + "/test/no-such-repo"));
}

// The daemon keeps FILE.part only after a broken transfer (a retry continues it; it is never
// listed): here the next pull resumes it with a Range request.
TEST_F(ServerPullTest, BrokenTransferIsResumedByTheNextPull) {
  write_text(repo_dir_ + "/stories260K.F32.gguf.cut-after", "50000");
  const Pulled broken = pull(client_, kRepoName, false);
  ASSERT_TRUE(broken.error) << daemon_.log();
  EXPECT_EQ(broken.error->code, proto::WireError::kPullFailed);
  EXPECT_NE(broken.error->message.find("resume"), std::string::npos) << broken.error->message;
  EXPECT_EQ(read_file(pulled_path() + ".part"), source_.substr(0, 50000));
  EXPECT_FALSE(serves(client_, kRepoName));

  fs::remove(repo_dir_ + "/stories260K.F32.gguf.cut-after");
  const Pulled resumed = pull(client_, kRepoName, false);
  ASSERT_TRUE(resumed.pulled) << (resumed.error ? resumed.error->message : "");
  EXPECT_EQ(resumed.pulled->downloaded_bytes, source_.size() - 50000);
  EXPECT_EQ(read_file(pulled_path()), source_);
  EXPECT_NE(read_file(log_).find("range=bytes=50000-"), std::string::npos);
}

TEST_F(ServerPullTest, PullDoesNotStallAnotherClientsGeneration) {
  // ~70 pieces 50 ms apart: a download of several seconds.
  write_text(repo_dir_ + "/stories260K.F32.gguf.delay-ms", "50");
  UdsClient other;
  ASSERT_TRUE(other.connect(daemon_.socket_path()));
  ASSERT_TRUE(request(other, simple(proto::LoadRequest{"aidreams260K", std::nullopt}), 60000));

  ASSERT_TRUE(client_.send(simple(proto::PullRequest{kRepoName, true}, 5)));
  bool downloading = false;  // a first piece arrived
  for (int i = 0; i < 100 && !downloading; ++i) {
    const auto m = client_.recv(1000);
    const auto* p = m ? std::get_if<proto::PullProgressAnswer>(&m->body) : nullptr;
    downloading = p != nullptr && p->completed > 0 && p->completed < p->total;
  }
  ASSERT_TRUE(downloading) << daemon_.log();

  const Clock::time_point started = Clock::now();
  const Generated g = generate_on(other, "aidreams260K", 40);
  const Clock::time_point generated = Clock::now();
  ASSERT_FALSE(g.error) << g.error->message;
  EXPECT_EQ(g.ids.size(), 40u);
  // The generation was not held behind the download: it ended while the pull still ran.
  std::optional<proto::PulledAnswer> pulled;
  Clock::time_point pulled_at{};
  for (int i = 0; i < 120 && !pulled; ++i) {
    const auto m = client_.recv(1000);
    if (const auto* a = m ? std::get_if<proto::PulledAnswer>(&m->body) : nullptr) {
      pulled = *a;
      pulled_at = Clock::now();
    }
  }
  ASSERT_TRUE(pulled) << daemon_.log();
  EXPECT_LT(generated, pulled_at);
  EXPECT_LT(generated - started, std::chrono::seconds(2));
  EXPECT_EQ(read_file(pulled_path()), source_);
}

TEST_F(ServerPullTest, DeleteRemovesAPulledModelAndRefusesOthers) {
  const Pulled p = pull(client_, kRepoName, false);
  ASSERT_TRUE(p.pulled) << (p.error ? p.error->message : "");
  ASSERT_FALSE(generate_on(client_, kRepoName, 8).error);  // loaded: the delete unloads it first

  EXPECT_FALSE(delete_model(client_, kRepoName)) << daemon_.log();
  EXPECT_FALSE(fs::exists(pulled_path()));
  EXPECT_FALSE(fs::exists(cache_ + "/test"));  // its empty owner/repo folders went too
  EXPECT_TRUE(fs::exists(cache_));
  EXPECT_FALSE(serves(client_, kRepoName));
  const Generated gone = generate_on(client_, kRepoName, 8);
  ASSERT_TRUE(gone.error);
  EXPECT_EQ(gone.error->code, proto::WireError::kNotFound);

  // A --models-dir file is not the daemon's to delete; an unknown name is not found.
  const std::optional<proto::ProtocolError> refused = delete_model(client_, "aidreams260K");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, proto::WireError::kUnsupported);
  EXPECT_NE(refused->message.find("--models-dir"), std::string::npos) << refused->message;
  EXPECT_TRUE(fs::exists(models_dir_ + "/aidreams260K.gguf"));
  EXPECT_TRUE(serves(client_, "aidreams260K"));
  const std::optional<proto::ProtocolError> unknown = delete_model(client_, "nobody/nothing:Q4_K_M");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->code, proto::WireError::kNotFound);
}

TEST_F(ServerPullTest, SecondPullOfTheSameNameJoinsTheFirst) {
  write_text(repo_dir_ + "/stories260K.F32.gguf.delay-ms", "20");
  UdsClient other;
  ASSERT_TRUE(other.connect(daemon_.socket_path()));
  ASSERT_TRUE(client_.send(simple(proto::PullRequest{kRepoName, false}, 5)));
  const Pulled second = pull(other, kRepoName, false);
  const Pulled first = read_pull(client_, kRepoName, 5);  // its request was sent first
  ASSERT_TRUE(first.pulled && second.pulled) << daemon_.log();
  EXPECT_EQ(first.pulled->path, second.pulled->path);
  EXPECT_EQ(read_file(pulled_path()), source_);
  const std::string log = read_file(log_);
  size_t downloads = 0;
  for (size_t at = log.find("resolve/main/stories260K.F32.gguf"); at != std::string::npos;
       at = log.find("resolve/main/stories260K.F32.gguf", at + 1)) {
    ++downloads;
  }
  EXPECT_EQ(downloads, 1u) << log;
}

TEST_F(ServerPullTest, DeleteOfAModelInUseIsRefused) {
  ASSERT_TRUE(pull(client_, kRepoName, false).pulled);
  UdsClient other;
  ASSERT_TRUE(other.connect(daemon_.socket_path()));
  proto::Request long_run = greedy_request(400, /*ignore_eos=*/true);
  std::get<proto::GenerateRequest>(long_run.body).model = kRepoName;
  const auto accepted = request(client_, long_run, 60000);
  ASSERT_TRUE(accepted && std::holds_alternative<proto::AcceptedAnswer>(accepted->body));
  const std::optional<proto::ProtocolError> busy = delete_model(other, kRepoName);
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->code, proto::WireError::kOverloaded) << busy->message;
  EXPECT_NE(busy->message.find("in use"), std::string::npos) << busy->message;
  EXPECT_TRUE(fs::exists(pulled_path()));
  StreamCollector s{std::get<proto::AcceptedAnswer>(accepted->body).id};
  ASSERT_TRUE(collect(client_, s, 60000));
  EXPECT_FALSE(delete_model(other, kRepoName));  // idle now
  EXPECT_FALSE(fs::exists(pulled_path()));
}

// A shutdown does not wait for a download: the pull is cancelled, its client told, and FILE.part
// stays for the next pull to resume.
TEST_F(ServerPullTest, ShutdownCancelsAPullAndExitsPromptly) {
  write_text(repo_dir_ + "/stories260K.F32.gguf.delay-ms", "200");  // about 15 s in all
  ASSERT_TRUE(client_.send(simple(proto::PullRequest{kRepoName, true}, 5)));
  bool downloading = false;
  for (int i = 0; i < 100 && !downloading; ++i) {
    const auto m = client_.recv(1000);
    const auto* p = m ? std::get_if<proto::PullProgressAnswer>(&m->body) : nullptr;
    downloading = p != nullptr && p->completed > 0;
  }
  ASSERT_TRUE(downloading) << daemon_.log();
  const Clock::time_point asked = Clock::now();
  daemon_.signal(SIGTERM);
  std::optional<proto::ProtocolError> error;
  for (int i = 0; i < 20 && !error; ++i) {
    const auto m = client_.recv(500);
    if (const auto* e = m ? std::get_if<proto::ErrorAnswer>(&m->body) : nullptr) error = e->error;
  }
  ASSERT_TRUE(error) << daemon_.log();
  EXPECT_EQ(error->code, proto::WireError::kShuttingDown) << error->message;
  EXPECT_EQ(daemon_.wait_exit(10), 0) << daemon_.log();
  EXPECT_LT(Clock::now() - asked, std::chrono::seconds(5));
  EXPECT_FALSE(fs::exists(pulled_path()));
  EXPECT_TRUE(fs::exists(pulled_path() + ".part"));
}

// --no-model-cache: a pulled model could not be served, so a pull is refused saying why.
TEST_F(ServerPullTest, WithoutTheModelCacheAPullIsRefused) {
  DaemonConfig config;
  config.dir = dir_.path + "/second";
  fs::create_directories(config.dir);
  config.with_model = false;
  config.extra_args = {"--models-dir", models_dir_, "--no-model-cache"};
  config.env = {"VKSTREAM_CACHE_DIR=" + cache_, "VKSTREAM_HF_ENDPOINT=" + endpoint_};
  DaemonProcess second;
  second.start(config);
  ASSERT_TRUE(second.wait_ready(60)) << second.log();
  UdsClient c;
  ASSERT_TRUE(c.connect(second.socket_path()));
  const Pulled p = pull(c, kRepoName, true);
  ASSERT_TRUE(p.error);
  EXPECT_EQ(p.error->code, proto::WireError::kUnsupported);
  EXPECT_NE(p.error->message.find("--no-model-cache"), std::string::npos) << p.error->message;
  EXPECT_FALSE(fs::exists(cache_));
  c.close();
  second.signal(SIGTERM);
  EXPECT_EQ(second.wait_exit(20), 0) << second.log();
}

}  // namespace
}  // namespace vks::test
