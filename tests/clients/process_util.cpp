#include "tests/clients/process_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/common/test_models.h"

namespace vks::test {
namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int wait_with_timeout(pid_t pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return decode_status(status);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return decode_status(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool socket_accepts(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

std::string make_temp_dir(const char* prefix) {
  std::string tmpl = std::string("/tmp/") + prefix + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input, int timeout_s) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  std::vector<char*> args = c_argv(argv);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::signal(SIGPIPE, SIG_IGN);
  if (!input.empty()) {
    [[maybe_unused]] const ssize_t n = ::write(in_pipe[1], input.data(), input.size());
  }
  ::close(in_pipe[1]);
  ProcessResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open = 2;
  while (open > 0 && std::chrono::steady_clock::now() < deadline) {
    if (::poll(fds, 2, 100) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (pollfd& p : fds) {
    if (p.fd >= 0) ::close(p.fd);
  }
  const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - std::chrono::steady_clock::now());
  r.exit_code = wait_with_timeout(pid, static_cast<int>(std::max<int64_t>(0, left.count())));
  return r;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, const std::string& stdout_path) {
  std::vector<char*> args = c_argv(argv);
  const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out, 1);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::close(out);
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    wait_with_timeout(pid_, 10);
  }
}

int BackgroundProcess::wait(int timeout_s) {
  const int code = wait_with_timeout(pid_, timeout_s);
  pid_ = -1;
  return code;
}

Daemon::Daemon(const std::vector<std::string>& extra_args, Backend backend) {
  dir_ = make_temp_dir("vks-clients");
  const bool own_model = std::find(extra_args.begin(), extra_args.end(), "--model") != extra_args.end();
  std::vector<std::string> argv = {build_dir() + "/server/vkstreamd",
                                   "--model", own_model ? "" : model_path("stories260K.gguf"),
                                   backend == Backend::kCpu ? "--cpu" : "--no-cpu-fallback",
                                   "--socket", dir_ + "/vkstream.sock",
                                   "--zmq", "ipc://" + dir_ + "/router.zmq",
                                   "--pub", "ipc://" + dir_ + "/pub.zmq"};
  if (own_model) argv.erase(argv.begin() + 1, argv.begin() + 3);
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> args = c_argv(argv);
  const std::string log = dir_ + "/vkstreamd.log";
  const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(err, 1);
    ::dup2(err, 2);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::close(err);
  // On Vulkan, READY waits for every pipeline: lavapipe's cold compile of a K-quant model takes
  // 15-30 s on a loaded 2-core machine.
  const int start_limit_s = backend == Backend::kVulkan ? 180 : 60;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(start_limit_s);
  while (!socket_accepts(dir_ + "/vkstream.sock")) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("vkstreamd exited during start-up (" + argv[0] + "): " + read_file(log));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      throw std::runtime_error("vkstreamd did not come up within " + std::to_string(start_limit_s) +
                               " s: " + read_file(log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Daemon::~Daemon() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    wait_with_timeout(pid_, 15);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

vkstream::Endpoint Daemon::endpoint() const {
  return vkstream::Endpoint{dir_ + "/vkstream.sock", "", "ipc://" + dir_ + "/pub.zmq"};
}

vkstream::Endpoint Daemon::zmq_endpoint() const {
  return vkstream::Endpoint{"", "ipc://" + dir_ + "/router.zmq", "ipc://" + dir_ + "/pub.zmq"};
}

std::vector<std::string> Daemon::cli_flags() const { return {"--socket", dir_ + "/vkstream.sock"}; }

}  // namespace vks::test
