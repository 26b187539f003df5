#include "tests/server/daemon_harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/common/test_models.h"

extern char** environ;

namespace vks::test {

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

}  // namespace

TempDir::TempDir() {
  // Short paths: sun_path holds at most 107 bytes.
  std::string tmpl = "/tmp/vksg-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string daemon_binary() { return build_dir() + "/server/vkstreamd"; }
std::string stories_model() { return model_path("stories260K.gguf"); }

std::vector<TokenId> reference_generated_ids() {
  std::ifstream in(model_path("reference/stories260K_greedy_once_upon_a_time_n64.ids"));
  std::string line;
  std::vector<std::vector<TokenId>> rows;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::vector<TokenId> row;
    TokenId id = 0;
    while (ls >> id) row.push_back(id);
    rows.push_back(row);
  }
  if (rows.size() < 2) throw std::runtime_error("reference ids file not found or malformed");
  return rows[1];
}

// ---- daemon process --------------------------------------------------------------------------

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0 && running()) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
}

void DaemonProcess::start(const DaemonConfig& config) {
  config_ = config;
  log_path_ = config.dir + "/daemon.log";
  std::vector<std::string> args;
  if (config.socket_activate) {
    args = {"/usr/bin/systemd-socket-activate", "-l", config.dir + "/vkstream.sock",
            "-l", config.dir + "/router.zmq", "-l", config.dir + "/pub.zmq",
            "--fdname=" + config.fdnames};
    for (const std::string& e : config.env) args.push_back("--setenv=" + e);
    args.push_back("--");
  }
  args.push_back(daemon_binary());
  if (config.with_model) {
    args.push_back("--model");
    args.push_back(stories_model());
  }
  if (!config.socket_activate) {
    // The test's own sockets, unless the test passes that flag itself.
    const std::vector<std::pair<std::string, std::string>> defaults = {
        {"--socket", config.dir + "/vkstream.sock"},
        {"--router", "ipc://" + config.dir + "/router.zmq"},
        {"--pub", "ipc://" + config.dir + "/pub.zmq"}};
    for (const auto& [flag, value] : defaults) {
      bool given = false;
      for (const std::string& a : config.extra_args) given |= a == flag;
      if (!given) args.insert(args.end(), {flag, value});
    }
  }
  args.insert(args.end(), config.extra_args.begin(), config.extra_args.end());

  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    bool overridden = name == "NOTIFY_SOCKET" || name == "LISTEN_FDS" || name == "LISTEN_PID" ||
                      name == "LISTEN_FDNAMES" || name == "WATCHDOG_USEC" || name == "WATCHDOG_PID";
    for (const std::string& add : config.env) overridden |= add.substr(0, add.find('=')) == name;
    if (!overridden) env.push_back(kv);
  }
  if (!config.socket_activate) env.insert(env.end(), config.env.begin(), config.env.end());

  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(std::string("posix_spawn: ") + strerror(rc));
}

bool DaemonProcess::running() {
  if (pid_ <= 0 || status_ != -1) return false;
  const pid_t r = waitpid(pid_, &status_, WNOHANG);
  if (r == 0) return true;
  if (r != pid_) status_ = 0;
  return false;
}

bool DaemonProcess::wait_ready(double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  while (Clock::now() < deadline) {
    if (!running()) return false;
    UdsClient c;
    if (c.connect(socket_path())) {
      proto::Request hello = simple(proto::HelloRequest{}, 1);
      if (!c.send(hello)) continue;
      std::optional<proto::ServerMessage> m = c.recv(remaining_ms(deadline));
      return m && std::holds_alternative<proto::HelloAnswer>(m->body);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int DaemonProcess::wait_exit(double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  while (running()) {
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -2;
}

void DaemonProcess::signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

std::string DaemonProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- Unix socket client ----------------------------------------------------------------------

UdsClient::~UdsClient() { close(); }

void UdsClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool UdsClient::connect(const std::string& path) {
  close();
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close();
    return false;
  }
  closed_ = false;
  buffer_.clear();
  return true;
}

bool UdsClient::send_raw(std::string_view bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

bool UdsClient::send(std::string_view payload) {
  std::string frame;
  proto::append_frame(frame, payload);
  return send_raw(frame);
}

std::optional<std::string> UdsClient::recv_frame(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (buffer_.size() >= 4) {
      const auto* b = reinterpret_cast<const uint8_t*>(buffer_.data());
      const uint32_t n = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
      if (buffer_.size() >= 4 + size_t{n}) {
        std::string payload = buffer_.substr(4, n);
        buffer_.erase(0, 4 + size_t{n});
        return payload;
      }
    }
    if (closed_ || fd_ < 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, remaining_ms(deadline));
    if (r <= 0) return std::nullopt;
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
      closed_ = true;
      continue;
    }
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

std::optional<proto::ServerMessage> UdsClient::recv(int timeout_ms) {
  std::optional<std::string> payload = recv_frame(timeout_ms);
  if (!payload) return std::nullopt;
  proto::Result<proto::ServerMessage> m = proto::parse_server_message(*payload);
  if (!m) throw std::runtime_error("unparsable server message: " + m.error().message);
  return std::move(*m);
}

bool UdsClient::wait_closed(int timeout_ms, std::vector<std::string>* frames) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < deadline) {
    std::optional<std::string> f = recv_frame(remaining_ms(deadline));
    if (f) {
      if (frames != nullptr) frames->push_back(*f);
      continue;
    }
    if (closed_) return true;
  }
  return closed_;
}

// ---- ZeroMQ clients --------------------------------------------------------------------------

ZmqClient::ZmqClient(void* context) {
  socket_ = zmq_socket(context, ZMQ_DEALER);
  int linger = 0;
  zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof(linger));
}
ZmqClient::~ZmqClient() { zmq_close(socket_); }
bool ZmqClient::connect(const std::string& endpoint) { return zmq_connect(socket_, endpoint.c_str()) == 0; }
bool ZmqClient::send(std::string_view payload) {
  return zmq_send(socket_, payload.data(), payload.size(), 0) >= 0;
}

std::optional<std::string> ZmqClient::recv_raw(int timeout_ms) {
  zmq_pollitem_t item{socket_, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&item, 1, timeout_ms) <= 0) return std::nullopt;
  zmq_msg_t msg;
  zmq_msg_init(&msg);
  if (zmq_msg_recv(&msg, socket_, 0) < 0) {
    zmq_msg_close(&msg);
    return std::nullopt;
  }
  std::string out(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
  zmq_msg_close(&msg);
  return out;
}

std::optional<proto::ServerMessage> ZmqClient::recv(int timeout_ms) {
  std::optional<std::string> payload = recv_raw(timeout_ms);
  if (!payload) return std::nullopt;
  proto::Result<proto::ServerMessage> m = proto::parse_server_message(*payload);
  if (!m) throw std::runtime_error("unparsable server message: " + m.error().message);
  return std::move(*m);
}

ZmqSubscriber::ZmqSubscriber(void* context) {
  socket_ = zmq_socket(context, ZMQ_SUB);
  int linger = 0;
  zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof(linger));
}
ZmqSubscriber::~ZmqSubscriber() { zmq_close(socket_); }
bool ZmqSubscriber::connect(const std::string& endpoint) { return zmq_connect(socket_, endpoint.c_str()) == 0; }
void ZmqSubscriber::subscribe(const std::string& topic) {
  zmq_setsockopt(socket_, ZMQ_SUBSCRIBE, topic.data(), topic.size());
}

std::optional<std::pair<std::string, std::string>> ZmqSubscriber::recv(int timeout_ms) {
  zmq_pollitem_t item{socket_, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&item, 1, timeout_ms) <= 0) return std::nullopt;
  std::vector<std::string> frames;
  for (;;) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, socket_, 0) < 0) {
      zmq_msg_close(&msg);
      return std::nullopt;
    }
    frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    const bool more = zmq_msg_more(&msg) != 0;
    zmq_msg_close(&msg);
    if (!more) break;
  }
  if (frames.size() != 2) return std::nullopt;
  return std::make_pair(frames[0], frames[1]);
}

// ---- streams ---------------------------------------------------------------------------------

bool StreamCollector::add(const proto::ServerMessage& m) {
  const auto* ev = std::get_if<proto::StreamEvent>(&m.body);
  if (ev == nullptr || ev->id != id) return false;
  if (ev->seq < 0) {
    if (ev->type == proto::StreamEventType::kProgress) progress.push_back(*ev);
    return true;
  }
  const auto seq = static_cast<size_t>(ev->seq);
  if (by_seq.size() <= seq) by_seq.resize(seq + 1);
  if (by_seq[seq]) {
    ++duplicates;
    return true;
  }
  if (ev->seq != next_expected) arrived_in_order = false;
  next_expected = ev->seq + 1;
  by_seq[seq] = *ev;
  if (ev->type == proto::StreamEventType::kFinished) {
    finished = true;
    last_seq = ev->seq;
  }
  return true;
}

bool StreamCollector::complete() const {
  if (!finished || static_cast<int64_t>(by_seq.size()) != last_seq + 1) return false;
  for (const auto& e : by_seq) {
    if (!e) return false;
  }
  return true;
}

std::vector<TokenId> StreamCollector::ids() const {
  std::vector<TokenId> out;
  for (const auto& e : by_seq) {
    if (e && e->type == proto::StreamEventType::kToken) out.insert(out.end(), e->ids.begin(), e->ids.end());
  }
  return out;
}

std::string StreamCollector::text() const {
  std::string out;
  for (const auto& e : by_seq) {
    if (e && e->type == proto::StreamEventType::kToken) out += e->text;
  }
  return out;
}

std::optional<FinishReason> StreamCollector::reason() const {
  if (!finished) return std::nullopt;
  return by_seq[static_cast<size_t>(last_seq)]->reason;
}

int StreamCollector::token_events() const {
  int n = 0;
  for (const auto& e : by_seq) n += e && e->type == proto::StreamEventType::kToken;
  return n;
}

proto::Request greedy_request(int32_t max_tokens, bool ignore_eos) {
  proto::GenerateRequest g;
  g.prompt = "Once upon a time";
  g.add_bos = true;
  g.temperature = 0.0;
  g.max_tokens = max_tokens;
  g.ignore_eos = ignore_eos;
  return simple(std::move(g), 7);
}

proto::Request simple(proto::RequestBody body, int64_t tag) {
  proto::Request r;
  r.body = std::move(body);
  if (tag != 0) r.tag = proto::Tag::of(tag);
  return r;
}

bool collect(UdsClient& client, StreamCollector& stream, int timeout_ms,
             std::vector<proto::ServerMessage>* others) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!stream.complete()) {
    std::optional<proto::ServerMessage> m = client.recv(remaining_ms(deadline));
    if (!m) return false;
    if (!stream.add(*m) && others != nullptr) others->push_back(std::move(*m));
  }
  return true;
}

bool collect(ZmqClient& client, StreamCollector& stream, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!stream.complete()) {
    std::optional<proto::ServerMessage> m = client.recv(remaining_ms(deadline));
    if (!m) return false;
    stream.add(*m);
  }
  return true;
}

bool collect(ZmqSubscriber& sub, StreamCollector& stream, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!stream.complete()) {
    auto m = sub.recv(remaining_ms(deadline));
    if (!m) return false;
    proto::Result<proto::ServerMessage> parsed = proto::parse_server_message(m->second);
    if (!parsed) return false;
    stream.add(*parsed);
  }
  return true;
}

std::optional<proto::ServerMessage> request(UdsClient& client, const proto::Request& req, int timeout_ms) {
  if (!client.send(req)) return std::nullopt;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::optional<proto::ServerMessage> m = client.recv(remaining_ms(deadline));
    if (!m) return std::nullopt;
    if (!std::holds_alternative<proto::StreamEvent>(m->body)) return m;
  }
}

bool wait_for_subscriptions(UdsClient& client, int32_t n, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int64_t tag = 9000;; ++tag) {
    const std::optional<proto::ServerMessage> m = request(client, simple(proto::StatsRequest{}, tag), remaining_ms(deadline));
    if (!m) return false;
    const auto* stats = std::get_if<proto::StatsAnswer>(&m->body);
    if (stats != nullptr && stats->stats.server.subscriptions >= n) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace vks::test
