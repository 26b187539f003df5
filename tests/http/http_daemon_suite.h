#pragma once
// The fixture of the HTTP end-to-end suites: one vkstreamd per suite on stories260K (CPU backend),
// HTTP on a Unix socket in the suite's folder, stopped after the suite (and its exit checked).
#include <gtest/gtest.h>
#include <csignal>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "tests/http/http_test_client.h"
#include "tests/server/daemon_harness.h"

namespace vks::test {

class HttpDaemonSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { start_daemon({}); }
  static void TearDownTestSuite() { stop_daemon(); }
  void SetUp() override { ASSERT_TRUE(ready_) << "daemon did not start:\n" << daemon_->log(); }

  // `options` go between --cpu and --http (a suite that needs more defines its own SetUpTestSuite).
  static void start_daemon(const std::vector<std::string>& options) {
    dir_ = new TempDir();
    daemon_ = new DaemonProcess();
    DaemonConfig config;
    config.dir = dir_->path;
    config.extra_args = {"--cpu"};
    config.extra_args.insert(config.extra_args.end(), options.begin(), options.end());
    config.extra_args.insert(config.extra_args.end(), {"--http", "unix:" + http_path()});
    daemon_->start(config);
    ready_ = daemon_->wait_ready(60);
  }
  static void stop_daemon() {
    daemon_->signal(SIGTERM);
    EXPECT_EQ(daemon_->wait_exit(20), 0) << daemon_->log();
    delete daemon_;
    delete dir_;
  }

  static std::string http_path() { return dir_->path + "/http.sock"; }

  // POSTs `body` to `path`: the response, or nullopt when the daemon did not answer within 30 s.
  static std::optional<RawResponse> call(const std::string& path, const nlohmann::json& body,
                                         const std::string& headers = {}) {
    RawHttpClient c;
    if (!c.connect_unix(http_path())) return std::nullopt;
    if (!c.send(http_request("POST", path, body.dump(), headers))) return std::nullopt;
    return c.read_response(30000);
  }

  static inline TempDir* dir_ = nullptr;
  static inline DaemonProcess* daemon_ = nullptr;
  static inline bool ready_ = false;
};

}  // namespace vks::test
