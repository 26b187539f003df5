// `vkstream pull` and `vkstream models` against a fake Hugging Face on loopback
// (fake_model_server.py): plain download, listing errors, an interrupted transfer resumed with a
// Range request, a corrupted download caught by sha256, an unreachable host, and cached names
// accepted by `run --model`.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "tests/clients/process_util.h"
#include "tests/common/test_models.h"

namespace {

namespace fs = std::filesystem;
using vks::test::ProcessResult;

std::string vkstream_exe() { return vks::test::build_dir() + "/clients/cli/vkstream"; }

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// A port on loopback where nothing listens.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

class CliPull : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = vks::test::make_temp_dir("vks-pull");
    repo_dir_ = dir_ + "/hub/test/stories260K-GGUF";
    fs::create_directories(repo_dir_);
    source_bytes_ = vks::test::read_file(vks::test::model_path("stories260K.gguf"));
    ASSERT_GT(source_bytes_.size(), 100000u);
    write_file(repo_dir_ + "/stories260K.F32.gguf", source_bytes_);
    write_file(repo_dir_ + "/stories260K.Q8_0.gguf", source_bytes_);
    write_file(repo_dir_ + "/README.md", "a model card");
    cache_ = dir_ + "/cache";
    log_ = dir_ + "/requests.log";
    const std::string port_file = dir_ + "/port";
    server_ = std::make_unique<vks::test::BackgroundProcess>(
        std::vector<std::string>{"/usr/bin/python3", std::string(VKS_SOURCE_DIR) + "/tests/clients/fake_model_server.py",
                                 dir_ + "/hub", port_file, log_},
        dir_ + "/server.out");
    for (int i = 0; i < 200 && !fs::exists(port_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string port = vks::test::read_file(port_file);
    ASSERT_FALSE(port.empty()) << "fake model server did not start";
    endpoint_ = "http://127.0.0.1:" + port;
    ::setenv("VKSTREAM_HF_ENDPOINT", endpoint_.c_str(), 1);
    ::setenv("VKSTREAM_CACHE_DIR", cache_.c_str(), 1);
  }
  void TearDown() override {
    server_.reset();
    ::unsetenv("VKSTREAM_HF_ENDPOINT");
    ::unsetenv("VKSTREAM_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  ProcessResult pull(const std::string& source) { return vks::test::run_process({vkstream_exe(), "pull", source}, {}, 60); }
  std::string cached_path() const { return cache_ + "/test/stories260K-GGUF/stories260K.F32.gguf"; }

  std::string dir_, repo_dir_, cache_, log_, endpoint_, source_bytes_;
  std::unique_ptr<vks::test::BackgroundProcess> server_;
};

TEST_F(CliPull, HuggingFaceSourceDownloadsTheQuantIntoTheCacheAndItRuns) {
  const ProcessResult r = pull("test/stories260K-GGUF:f32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, cached_path() + "\n");
  EXPECT_EQ(vks::test::read_file(cached_path()), source_bytes_);
  EXPECT_FALSE(fs::exists(cached_path() + ".part"));
  EXPECT_NE(r.err.find("runnable"), std::string::npos) << r.err;

  const ProcessResult again = pull("test/stories260K-GGUF:F32");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("already cached"), std::string::npos) << again.err;

  const ProcessResult listed = vks::test::run_process({vkstream_exe(), "models"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("test/stories260K-GGUF/stories260K.F32.gguf"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("llama"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find(" F32 "), std::string::npos) << listed.out;  // the TYPE column, as Ollama names it
  EXPECT_NE(listed.out.find("yes"), std::string::npos) << listed.out;

  // The pulled name works as --model.
  const ProcessResult ran = vks::test::run_process({vkstream_exe(), "run", "--cpu", "--greedy", "-n", "8", "--model",
                                                    "test/stories260K-GGUF:F32", "Once upon a time"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_GT(ran.out.size(), std::string("Once upon a time").size());
}

TEST_F(CliPull, ListingErrorsNameTheChoices) {
  const ProcessResult no_default = pull("test/stories260K-GGUF");
  EXPECT_EQ(no_default.exit_code, 1);
  EXPECT_NE(no_default.err.find("Q4_K_M"), std::string::npos) << no_default.err;
  EXPECT_NE(no_default.err.find("F32, Q8_0"), std::string::npos) << no_default.err;

  const ProcessResult missing = pull("test/no-such-repo:Q4_K_M");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("404"), std::string::npos) << missing.err;

  const ProcessResult bad = pull("not a source");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("OWNER/REPO"), std::string::npos) << bad.err;
}

TEST_F(CliPull, InterruptedTransferResumesWithARangeRequest) {
  write_file(repo_dir_ + "/stories260K.F32.gguf.cut-after", "50000");
  const ProcessResult broken = pull("test/stories260K-GGUF:F32");
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.err.find("again to resume"), std::string::npos) << broken.err;
  EXPECT_EQ(vks::test::read_file(cached_path() + ".part"), source_bytes_.substr(0, 50000));
  EXPECT_FALSE(fs::exists(cached_path()));

  fs::remove(repo_dir_ + "/stories260K.F32.gguf.cut-after");
  const ProcessResult resumed = pull("test/stories260K-GGUF:F32");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(vks::test::read_file(cached_path()), source_bytes_);
  EXPECT_NE(vks::test::read_file(log_).find("range=bytes=50000-"), std::string::npos) << vks::test::read_file(log_);
}

TEST_F(CliPull, CorruptedDownloadFailsTheSha256CheckAndLeavesNothing) {
  write_file(repo_dir_ + "/stories260K.F32.gguf.fake-sha256", std::string(64, 'a'));
  const ProcessResult r = pull("test/stories260K-GGUF:F32");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("sha256 mismatch"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[corrupt]"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(cached_path()));
  EXPECT_FALSE(fs::exists(cached_path() + ".part"));
}

TEST_F(CliPull, PlainUrlGoesToTheCacheUnderItsFileName) {
  const ProcessResult r = pull(endpoint_ + "/test/stories260K-GGUF/resolve/main/stories260K.Q8_0.gguf");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, cache_ + "/stories260K.Q8_0.gguf\n");
  EXPECT_EQ(vks::test::read_file(cache_ + "/stories260K.Q8_0.gguf"), source_bytes_);
}

// Issue 37: a failed pull left an empty FILE.part in the cache (the file was opened before the
// transfer); a failure before any byte arrives leaves nothing.
TEST_F(CliPull, AFailureBeforeAnyByteLeavesNoPartFile) {
  const ProcessResult r = pull(endpoint_ + "/test/stories260K-GGUF/resolve/main/no-such.gguf");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("404"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(cache_ + "/no-such.gguf.part"));
  const std::string offline = "http://127.0.0.1:" + std::to_string(closed_port());
  EXPECT_EQ(pull(offline + "/x/y/resolve/main/m.gguf").exit_code, 1);
  EXPECT_FALSE(fs::exists(cache_ + "/m.gguf.part"));
}

TEST_F(CliPull, UnreachableHostSaysOffline) {
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(closed_port());
  ::setenv("VKSTREAM_HF_ENDPOINT", endpoint.c_str(), 1);
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult r = pull("test/stories260K-GGUF:F32");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot reach 127.0.0.1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("offline"), std::string::npos) << r.err;
  const ProcessResult url = pull(endpoint + "/x/y/resolve/main/m.gguf");
  EXPECT_EQ(url.exit_code, 1);
  EXPECT_NE(url.err.find("offline"), std::string::npos) << url.err;
}

TEST_F(CliPull, ModelsOnAnEmptyCacheSaysHowToGetOne) {
  const ProcessResult r = vks::test::run_process({vkstream_exe(), "models"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vkstream pull"), std::string::npos) << r.out;
}

}  // namespace
