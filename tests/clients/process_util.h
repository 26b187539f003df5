#pragma once
// Child processes for end-to-end tests: run a program to completion capturing its output, and a
// vkstreamd on stories260K with its sockets in a fresh temporary folder.
#include <sys/types.h>

#include <string>
#include <vector>

#include "vkstream/types.h"

namespace vks::test {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with `input` on stdin; kills it after timeout_s.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input = {}, int timeout_s = 60);

// A child process left running (for `follow` from another process), stopped by SIGTERM at destruction.
class BackgroundProcess {
 public:
  explicit BackgroundProcess(const std::vector<std::string>& argv, const std::string& stdout_path);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  // Waits for exit (up to timeout_s, then kills); returns the exit code.
  int wait(int timeout_s);

 private:
  pid_t pid_ = -1;
};

class Daemon {
 public:
  enum class Backend { kCpu, kVulkan };
  // Starts build_dir()/server/vkstreamd --model stories260K.gguf (unless extra_args has its own
  // --model) with sockets in a temp folder, on the CPU reference (--cpu) or on Vulkan
  // (--no-cpu-fallback, so a missing device fails instead of testing the CPU), and waits until its
  // Unix socket accepts connections. Throws std::runtime_error with the daemon's stderr when it
  // does not come up within 60 s (180 s on Vulkan, which compiles its pipelines first).
  explicit Daemon(const std::vector<std::string>& extra_args = {}, Backend backend = Backend::kCpu);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  const std::string& dir() const { return dir_; }
  vkstream::Endpoint endpoint() const;
  vkstream::Endpoint zmq_endpoint() const;  // the same daemon through ZeroMQ
  std::vector<std::string> cli_flags() const;  // --socket ... for the vkstream CLI

 private:
  std::string dir_;
  pid_t pid_ = -1;
};

// A fresh temporary folder (mkdtemp under /tmp).
std::string make_temp_dir(const char* prefix);
// Reads a whole file; empty when it cannot be read.
std::string read_file(const std::string& path);

}  // namespace vks::test
