// ipc_bench: the same greedy workload run (1) in process on the Engine, (2) through vkstreamd's Unix
// socket, (3) through its ZeroMQ ROUTER; prints tokens/s and the ratio to in-process, then the
// latency of a minimal request (generate with max_tokens 1) and of a hello round trip.
//   ipc_bench MODEL.gguf [--requests N] [--max-tokens M] [--concurrency C] [--latency-runs R] [--cpu]
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "bench/uds_conn.h"
#include "protocol/protocol.h"
#include "server/daemon.h"
#include "server/systemd_notify.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using vks::proto::ServerMessage;
using vks::proto::StreamEvent;
using vks::proto::StreamEventType;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

vks::GenerateRequest workload_request(int max_tokens) {
  vks::GenerateRequest r;
  r.prompt_text = "Once upon a time";
  r.sampling.temperature = 0;
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = true;
  r.logprobs = -1;
  return r;
}

std::string encoded_generate(int max_tokens) {
  // The same workload as workload_request, as the wire carries it.
  vks::proto::GenerateRequest g;
  g.prompt = "Once upon a time";
  g.temperature = 0.0;
  g.max_tokens = max_tokens;
  g.ignore_eos = true;
  return vks::proto::encode_request(vks::proto::RequestBody{std::move(g)});
}

struct RunResult {
  int64_t tokens = 0;
  double seconds = 0;
  double tokens_per_s() const { return seconds > 0 ? static_cast<double>(tokens) / seconds : 0; }
};

// ---- in process ------------------------------------------------------------------------------

class InProcess {
 public:
  explicit InProcess(vks::Engine& engine) : engine_(engine) {
    engine_.set_event_notifier([this] {
      std::lock_guard lock(mutex_);
      ++signals_;
      cv_.notify_one();
    });
  }
  // Keeps `concurrency` requests in flight until `requests` have finished.
  RunResult run(int requests, int max_tokens, int concurrency) {
    RunResult r;
    int submitted = 0;
    int finished = 0;
    const auto t0 = Clock::now();
    auto submit = [&] {
      vks::SubmitResult s = engine_.submit(workload_request(max_tokens));
      if (!s.ok) throw std::runtime_error("submit failed: " + s.message);
      ++submitted;
    };
    while (submitted < std::min(concurrency, requests)) submit();
    std::vector<vks::EngineEvent> events;
    while (finished < requests) {
      wait();
      events.clear();
      engine_.poll_events(events);
      for (const vks::EngineEvent& ev : events) {
        if (ev.type == vks::EventType::kFirstToken || ev.type == vks::EventType::kToken) {
          r.tokens += static_cast<int64_t>(ev.tokens.size());
        } else if (ev.type == vks::EventType::kFinished) {
          ++finished;
          if (submitted < requests) submit();
        }
      }
    }
    r.seconds = ms_since(t0) / 1000.0;
    return r;
  }
  // One request at a time: submit → finished.
  std::vector<double> latencies(int runs) {
    std::vector<double> out;
    std::vector<vks::EngineEvent> events;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = Clock::now();
      vks::SubmitResult s = engine_.submit(workload_request(1));
      if (!s.ok) throw std::runtime_error("submit failed: " + s.message);
      bool done = false;
      while (!done) {
        wait();
        events.clear();
        engine_.poll_events(events);
        for (const auto& ev : events) done |= ev.type == vks::EventType::kFinished;
      }
      out.push_back(ms_since(t0));
    }
    return out;
  }

 private:
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return signals_ > 0; });
    signals_ = 0;
  }
  vks::Engine& engine_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int signals_ = 0;
};

// ---- Unix socket -----------------------------------------------------------------------------

using vks::bench::UdsConn;

// Reads until the request's finished event; returns generated tokens.
template <class Conn>
int64_t read_stream(Conn& c) {
  int64_t tokens = 0;
  for (;;) {
    ServerMessage m = c.recv();
    if (const auto* ev = std::get_if<StreamEvent>(&m.body)) {
      if (ev->type == StreamEventType::kToken) tokens += static_cast<int64_t>(ev->ids.size());
      if (ev->type == StreamEventType::kFinished) return tokens;
    } else if (const auto* err = std::get_if<vks::proto::ErrorAnswer>(&m.body)) {
      throw std::runtime_error("server error: " + err->error.message);
    }
  }
}

// ---- ZeroMQ ----------------------------------------------------------------------------------

class ZmqConn {
 public:
  ZmqConn(void* ctx, const std::string& endpoint) {
    socket_ = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_connect(socket_, endpoint.c_str());
  }
  ~ZmqConn() { zmq_close(socket_); }
  void send(std::string_view payload) {
    if (zmq_send(socket_, payload.data(), payload.size(), 0) < 0) throw std::runtime_error("zmq_send");
  }
  ServerMessage recv() {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, socket_, 0) < 0) throw std::runtime_error("zmq_recv");
    auto m = vks::proto::parse_server_message(
        std::string_view(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg)));
    zmq_msg_close(&msg);
    if (!m) throw std::runtime_error("bad server message");
    return std::move(*m);
  }

 private:
  void* socket_ = nullptr;
};

// `concurrency` clients, each sending its share of the requests one after another.
template <class MakeConn>
RunResult run_clients(MakeConn make, int requests, int max_tokens, int concurrency) {
  std::atomic<int64_t> tokens{0};
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  const std::string payload = encoded_generate(max_tokens);
  const auto t0 = Clock::now();
  for (int i = 0; i < concurrency; ++i) {
    threads.emplace_back([&] {
      auto conn = make();
      while (next.fetch_add(1) < requests) {
        conn->send(payload);
        tokens += read_stream(*conn);
      }
    });
  }
  for (auto& t : threads) t.join();
  RunResult r;
  r.tokens = tokens.load();
  r.seconds = ms_since(t0) / 1000.0;
  return r;
}

template <class Conn>
std::vector<double> latencies(Conn& c, int runs, const std::string& payload) {
  std::vector<double> out;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    c.send(payload);
    read_stream(c);
    out.push_back(ms_since(t0));
  }
  return out;
}

template <class Conn>
std::vector<double> hello_latencies(Conn& c, int runs) {
  const std::string hello = vks::proto::encode_request(vks::proto::RequestBody{vks::proto::HelloRequest{}});
  std::vector<double> out;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    c.send(hello);
    c.recv();
    out.push_back(ms_since(t0));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ipc_bench: vkstreamd over Unix socket and ZeroMQ vs the Engine in process"};
  std::string model;
  int requests = 64;
  int max_tokens = 64;
  int concurrency = 8;
  int latency_runs = 200;
  int rounds = 3;
  bool cpu = false;
  std::string daemon = VKS_DAEMON_PATH;
  app.add_option("model", model, "GGUF model")->required();
  app.add_option("--requests", requests)->capture_default_str();
  app.add_option("--max-tokens", max_tokens)->capture_default_str();
  app.add_option("--concurrency", concurrency)->capture_default_str();
  app.add_option("--latency-runs", latency_runs, "sequential minimal requests per round")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds; the best throughput round counts")->capture_default_str();
  app.add_flag("--cpu", cpu, "CPU runner for both the daemon and in process");
  app.add_option("--daemon", daemon, "vkstreamd binary")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);

  try {
    // In process: the same loading path and engine configuration as the daemon.
    vks::server::ServerOptions options;
    options.model_path = model;
    options.force_cpu = cpu;
    spdlog::set_level(spdlog::level::warn);
    vks::server::ServedModel served = vks::server::load_served_model(model, options, {}, nullptr, nullptr);
    const std::string device = served.device;
    InProcess ip(*served.engine);

    // The daemon, in a temporary folder, with the same options.
    char dir_template[] = "/tmp/vks-ipc-bench-XXXXXX";
    const std::string dir = mkdtemp(dir_template);
    const std::string sock = dir + "/vkstream.sock";
    const std::string router = "ipc://" + dir + "/router.zmq";
    const std::string pub = "ipc://" + dir + "/pub.zmq";
    std::vector<std::string> args = {daemon, "--model", model, "--socket", sock, "--router", router,
                                     "--pub", pub, "--log-level", "warn"};
    if (cpu) args.push_back("--cpu");
    std::vector<char*> argv_c;
    for (auto& a : args) argv_c.push_back(a.data());
    argv_c.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, daemon.c_str(), nullptr, nullptr, argv_c.data(), environ) != 0) {
      std::fprintf(stderr, "cannot start %s\n", daemon.c_str());
      return 1;
    }
    bool up = false;
    for (int i = 0; i < 3000 && !up; ++i) {
      UdsConn probe(sock);
      up = probe.ok();
      if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!up) {
      std::fprintf(stderr, "vkstreamd did not come up\n");
      kill(pid, SIGKILL);
      return 1;
    }
    void* ctx = zmq_ctx_new();
    auto make_uds = [&] { return std::make_unique<UdsConn>(sock); };
    auto make_zmq = [&] { return std::make_unique<ZmqConn>(ctx, router); };
    const std::string minimal = encoded_generate(1);
    // Warm-up, then the three paths interleaved round by round (the machine is shared: interleaving
    // spreads background load evenly); the best round of each path counts.
    ip.run(std::min(requests, concurrency), max_tokens, concurrency);
    run_clients(make_uds, std::min(requests, concurrency), max_tokens, concurrency);
    RunResult in_process, uds, zmq;
    std::vector<double> in_process_latency, uds_latency, zmq_latency, uds_hello, zmq_hello;
    auto keep_best = [](RunResult& best, const RunResult& r) {
      if (r.tokens_per_s() > best.tokens_per_s()) best = r;
    };
    auto append = [](std::vector<double>& to, const std::vector<double>& from) {
      to.insert(to.end(), from.begin(), from.end());
    };
    {
    UdsConn uds_conn(sock);
    ZmqConn zmq_conn(ctx, router);
    for (int round = 0; round < rounds; ++round) {
      keep_best(in_process, ip.run(requests, max_tokens, concurrency));
      keep_best(uds, run_clients(make_uds, requests, max_tokens, concurrency));
      keep_best(zmq, run_clients(make_zmq, requests, max_tokens, concurrency));
      append(in_process_latency, ip.latencies(latency_runs));
      append(uds_latency, latencies(uds_conn, latency_runs, minimal));
      append(zmq_latency, latencies(zmq_conn, latency_runs, minimal));
      append(uds_hello, hello_latencies(uds_conn, latency_runs));
      append(zmq_hello, hello_latencies(zmq_conn, latency_runs));
    }
    }
    zmq_ctx_term(ctx);
    served.engine.reset();  // before `ip`, whose notifier it holds
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    rmdir(dir.c_str());

    std::printf("ipc_bench: %s on %s, %d requests x %d tokens, concurrency %d, best of %d rounds\n",
                model.c_str(), device.c_str(), requests, max_tokens, concurrency, rounds);
    std::printf("%-12s %12s %10s %14s\n", "path", "tokens/s", "ratio", "tokens");
    std::printf("%-12s %12.1f %10.3f %14lld\n", "in-process", in_process.tokens_per_s(), 1.0,
                static_cast<long long>(in_process.tokens));
    std::printf("%-12s %12.1f %10.3f %14lld\n", "unix-socket", uds.tokens_per_s(),
                uds.tokens_per_s() / in_process.tokens_per_s(), static_cast<long long>(uds.tokens));
    std::printf("%-12s %12.1f %10.3f %14lld\n", "zeromq", zmq.tokens_per_s(),
                zmq.tokens_per_s() / in_process.tokens_per_s(), static_cast<long long>(zmq.tokens));
    const double base = median(in_process_latency);
    std::printf("\nminimal request (generate, max_tokens 1), %d sequential runs, median ms:\n",
                latency_runs * rounds);
    std::printf("%-12s %12s %14s\n", "path", "median ms", "added us");
    std::printf("%-12s %12.3f %14s\n", "in-process", base, "-");
    std::printf("%-12s %12.3f %14.1f\n", "unix-socket", median(uds_latency), (median(uds_latency) - base) * 1000);
    std::printf("%-12s %12.3f %14.1f\n", "zeromq", median(zmq_latency), (median(zmq_latency) - base) * 1000);
    std::printf("\nhello round trip (no engine), median us: unix-socket %.1f, zeromq %.1f\n",
                median(uds_hello) * 1000, median(zmq_hello) * 1000);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ipc_bench: %s\n", e.what());
    return 1;
  }
}
