// store::download_file's hooks for vkstreamd's pulls, against a fake Hugging Face on loopback
// (tests/clients/fake_model_server.py, no network): the progress callback, the cancel flag, the
// bytes a call fetched, and what stays of FILE.part after a failure under each PartialFile policy.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "engine/common/error.h"
#include "store/downloader.h"
#include "tests/clients/process_util.h"

namespace vks::store {
namespace {

namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

class Downloader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::make_temp_dir("vks-dl");
    fs::create_directories(dir_ + "/hub/o/r");
    for (int i = 0; i < 40000; ++i) body_ += static_cast<char>('a' + i % 26);  // 40 KB: three 16 KiB pieces
    write_text(dir_ + "/hub/o/r/m.gguf", body_);
    const std::string port_file = dir_ + "/port";
    server_ = std::make_unique<test::BackgroundProcess>(
        std::vector<std::string>{"/usr/bin/python3", std::string(VKS_SOURCE_DIR) + "/tests/clients/fake_model_server.py",
                                 dir_ + "/hub", port_file, dir_ + "/log"},
        dir_ + "/server.out");
    for (int i = 0; i < 200 && !fs::exists(port_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string port = test::read_file(port_file);
    ASSERT_FALSE(port.empty()) << "fake model server did not start";
    plan_.url = "http://127.0.0.1:" + port + "/o/r/resolve/main/m.gguf";
    plan_.cache_name = "m.gguf";
    plan_.size_bytes = body_.size();
    dest_ = dir_ + "/cache/m.gguf";
  }
  void TearDown() override {
    server_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string dir_, body_, dest_;
  PullPlan plan_;
  std::unique_ptr<test::BackgroundProcess> server_;
};

TEST_F(Downloader, ReportsProgressAndTheBytesItFetched) {
  write_text(dir_ + "/hub/o/r/m.gguf.delay-ms", "150");  // pieces far enough apart to be reported
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  DownloadOptions options;
  options.on_progress = [&](uint64_t done, uint64_t total) { seen.emplace_back(done, total); };
  EXPECT_EQ(download_file(plan_, dest_, options), body_.size());
  EXPECT_EQ(test::read_file(dest_), body_);
  ASSERT_GE(seen.size(), 2u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_LE(seen[i - 1].first, seen[i].first);
  EXPECT_EQ(seen.back(), std::make_pair(uint64_t{body_.size()}, uint64_t{body_.size()}));
  EXPECT_EQ(seen.front().second, body_.size());  // the plan's size, from the start
}

TEST_F(Downloader, CancelStopsTheTransferAndKeepsThePartForResuming) {
  write_text(dir_ + "/hub/o/r/m.gguf.delay-ms", "300");
  std::atomic<bool> cancel{false};
  DownloadOptions options;
  options.cancel = &cancel;
  options.partial = PartialFile::kKeepIfResumable;
  options.on_progress = [&](uint64_t done, uint64_t) {
    if (done > 0) cancel = true;
  };
  try {
    download_file(plan_, dest_, options);
    ADD_FAILURE() << "not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
  }
  EXPECT_FALSE(fs::exists(dest_));
  const std::string part = test::read_file(dest_ + ".part");
  EXPECT_FALSE(part.empty());
  EXPECT_EQ(part, body_.substr(0, part.size()));

  // The next call resumes it and fetches the rest only.
  fs::remove(dir_ + "/hub/o/r/m.gguf.delay-ms");
  EXPECT_EQ(download_file(plan_, dest_, DownloadOptions{}), body_.size() - part.size());
  EXPECT_EQ(test::read_file(dest_), body_);
}

TEST_F(Downloader, AnHttpErrorRemovesThePartUnlessAskedToKeepIt) {
  fs::create_directories(dir_ + "/cache");
  plan_.url += ".missing";  // 404, after a previous transfer left 1000 bytes
  for (const PartialFile policy : {PartialFile::kKeep, PartialFile::kKeepIfResumable}) {
    write_text(dest_ + ".part", body_.substr(0, 1000));
    DownloadOptions options;
    options.partial = policy;
    EXPECT_THROW(download_file(plan_, dest_, options), Error);
    EXPECT_EQ(fs::exists(dest_ + ".part"), policy == PartialFile::kKeep);
  }
}

TEST_F(Downloader, ABrokenTransferKeepsThePartUnderEitherPolicy) {
  write_text(dir_ + "/hub/o/r/m.gguf.cut-after", "20000");
  DownloadOptions options;
  options.partial = PartialFile::kKeepIfResumable;
  try {
    download_file(plan_, dest_, options);
    ADD_FAILURE() << "the cut transfer succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("resume"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::read_file(dest_ + ".part"), body_.substr(0, 20000));
}

}  // namespace
}  // namespace vks::store
