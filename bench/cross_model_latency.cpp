// vks_bench_cross_model: does a long prefill on one model stall another model's decode? (issue 33's
// scheduler figure). One vkstreamd serves two models by name from a temporary --models-dir; model B
// decodes greedily alone, then again while model A prefills a long prompt, and B's inter-token
// latency (ITL: the gap between successive token events, as a client sees it) is compared.
// Prints figures only; it asserts nothing about time (the machine is shared, the numbers are for notes).
//   vks_bench_cross_model --model-a BIG.gguf --model-b SMALL.gguf [--prompt-a 4096] [--tokens-b 128]
//                         [--rounds 3] [--daemon PATH] [--extra --cpu ...]
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "bench/uds_conn.h"
#include "protocol/protocol.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using vks::proto::ServerMessage;
using vks::proto::StreamEvent;
using vks::proto::StreamEventType;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Nearest-rank percentile: with ~128 gaps p99 is the second largest, an observed gap, not an interpolation.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string s;
  std::getline(f, s);
  return s;
}

// The Unix-socket client of bench/ipc_bench.cpp: 4-byte big-endian length + one msgpack map each way.
using vks::bench::UdsConn;

// When each event of one request arrived at the client.
struct Trace {
  Clock::time_point sent, scheduled, first_token, finished;
  std::vector<Clock::time_point> token_events;  // the first token's event included
  int64_t tokens = 0;
  int buffered_token_events = 0;  // token events that came in the same read as the event before
  bool saw_scheduled = false;
  double ttft_ms() const { return ms_between(sent, first_token); }
  std::vector<double> gaps() const {
    std::vector<double> g;
    for (size_t i = 1; i < token_events.size(); ++i) g.push_back(ms_between(token_events[i - 1], token_events[i]));
    return g;
  }
};

// Sends one generate and reads its stream to `finished`. `on_started` fires once the request holds
// the engine (scheduled, or its first token if no scheduled event came), so that the other model's
// decode can start only when this prefill is really running.
Trace run_request(UdsConn& c, const vks::proto::GenerateRequest& g, const std::function<void()>& on_started = {}) {
  Trace t;
  bool started = false;
  auto start = [&] {
    if (!started && on_started) on_started();
    started = true;
  };
  t.sent = Clock::now();
  c.send(vks::proto::encode_request(vks::proto::RequestBody{g}));
  for (;;) {
    ServerMessage m = c.recv();
    const auto now = Clock::now();
    if (const auto* ev = std::get_if<StreamEvent>(&m.body)) {
      if (ev->type == StreamEventType::kScheduled) {
        t.scheduled = now;
        t.saw_scheduled = true;
        start();
      } else if (ev->type == StreamEventType::kToken) {
        if (t.token_events.empty()) t.first_token = now;
        t.token_events.push_back(now);
        t.tokens += static_cast<int64_t>(ev->ids.size());
        if (c.last_buffered() && t.token_events.size() > 1) ++t.buffered_token_events;
        start();
      } else if (ev->type == StreamEventType::kFinished) {
        t.finished = now;
        start();
        return t;
      } else if (ev->type == StreamEventType::kError) {
        throw std::runtime_error("stream error: " + ev->error_message);
      }
    } else if (const auto* err = std::get_if<vks::proto::ErrorAnswer>(&m.body)) {
      throw std::runtime_error("server error: " + err->error.message);
    }
  }
}

template <class Answer>
Answer ask(UdsConn& c, const vks::proto::RequestBody& body) {
  c.send(vks::proto::encode_request(body));
  ServerMessage m = c.recv();
  if (const auto* a = std::get_if<Answer>(&m.body)) return *a;
  if (const auto* err = std::get_if<vks::proto::ErrorAnswer>(&m.body)) throw std::runtime_error(err->error.message);
  throw std::runtime_error("unexpected answer");
}

// B's workload: the same greedy decode every time (ignore_eos: always exactly `tokens` tokens).
vks::proto::GenerateRequest b_request(int tokens) {
  vks::proto::GenerateRequest g;
  g.model = "b";
  g.prompt = "Once upon a time";
  g.temperature = 0.0;
  g.max_tokens = tokens;
  g.ignore_eos = true;
  return g;
}

// A's workload: `n` prompt ids, 1 generated token, so that A's time is its prefill. Each call gets a
// fresh `salt` so that no prompt shares a prefix with an earlier one (the prefix cache would skip the
// prefill); ids stay in 3..vocab-1, clear of <unk> <s> </s>.
vks::proto::GenerateRequest a_request(int n, int vocab, int salt) {
  vks::proto::GenerateRequest g;
  g.model = "a";
  g.add_bos = false;
  const int span = std::max(vocab - 3, 1);
  for (int i = 0; i < n; ++i) g.prompt_ids.push_back(3 + static_cast<int>((static_cast<int64_t>(i + salt) * 7919) % span));
  g.temperature = 0.0;
  g.max_tokens = 1;
  g.ignore_eos = true;
  return g;
}

struct ItlStats {
  std::vector<double> gaps;
  void print(const char* label) const {
    // The mean is there because p50 can be ~0 when the daemon writes several token events at once.
    double sum = 0;
    for (double g : gaps) sum += g;
    std::printf("  B ITL %-10s p50 %8.3f ms  p99 %8.3f ms  max %8.3f ms  mean %7.3f ms  (%zu gaps)\n", label,
                percentile(gaps, 50), percentile(gaps, 99),
                gaps.empty() ? 0.0 : *std::max_element(gaps.begin(), gaps.end()),
                gaps.empty() ? 0.0 : sum / static_cast<double>(gaps.size()), gaps.size());
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vks_bench_cross_model: model B's inter-token latency alone and during model A's long prefill"};
  std::string model_a, model_b, daemon = VKS_DAEMON_PATH;
  int prompt_a = 4096, tokens_b = 128, rounds = 3, kv_tokens = 0;
  std::vector<std::string> extra;
  app.add_option("--model-a", model_a, "GGUF of the long-prefill model")->required()->check(CLI::ExistingFile);
  app.add_option("--model-b", model_b, "GGUF of the decoding model")->required()->check(CLI::ExistingFile);
  app.add_option("--prompt-a", prompt_a, "A's prompt tokens")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--tokens-b", tokens_b, "B's generated tokens")->capture_default_str()->check(CLI::Range(2, 1 << 20));
  app.add_option("--rounds", rounds)->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--kv-tokens", kv_tokens, "the daemon's --kv-tokens (0 = --prompt-a + --tokens-b + 64)");
  app.add_option("--daemon", daemon, "vkstreamd binary")->capture_default_str();
  app.add_option("--extra", extra, "an argument passed to vkstreamd (repeatable), e.g. --extra=--cpu")
      ->allow_extra_args(false);
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);

  std::printf("cross_model: load at start %s\n", loadavg().c_str());
  // Both files by stem "a" and "b" in a folder of their own, so the daemon serves exactly these two.
  char dir_template[] = "/tmp/vks-cross-model-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  namespace fs = std::filesystem;
  fs::create_symlink(fs::absolute(model_a), dir + "/a.gguf");
  fs::create_symlink(fs::absolute(model_b), dir + "/b.gguf");
  const std::string sock = dir + "/vkstream.sock";
  if (kv_tokens == 0) kv_tokens = prompt_a + tokens_b + 64;  // A's prompt must fit A's KV pool
  std::vector<std::string> args = {daemon, "--models-dir", dir, "--no-model-cache", "--socket", sock,
                                   "--router", "ipc://" + dir + "/router.zmq", "--pub", "ipc://" + dir + "/pub.zmq",
                                   "--log-level", "warn", "--kv-tokens", std::to_string(kv_tokens)};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv_c;
  for (auto& a : args) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, daemon.c_str(), nullptr, nullptr, argv_c.data(), environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", daemon.c_str());
    return 1;
  }
  auto cleanup = [&] {
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    fs::remove_all(dir);
  };
  int rc = 0;
  try {
    bool up = false;
    for (int i = 0; i < 3000 && !up; ++i) {
      UdsConn probe(sock);
      up = probe.ok();
      if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!up) throw std::runtime_error("vkstreamd did not come up");
    // One connection per model: A's stream is read on a thread of its own while B's is read here.
    UdsConn conn_a(sock), conn_b(sock);

    // Warm-up: loads both models (a load is not what is measured) and runs each once.
    run_request(conn_b, b_request(4));
    // The `model` answer describes a model only once it is loaded, so A's vocabulary is not known yet:
    // its warm-up prompt keeps to ids 3..10, which any vocabulary has.
    int salt = 1;
    run_request(conn_a, a_request(8, 11, salt++));
    const vks::proto::ModelInfo a = ask<vks::proto::ModelAnswer>(conn_a, vks::proto::ModelRequest{"a"}).model;
    const vks::proto::ModelInfo b = ask<vks::proto::ModelAnswer>(conn_b, vks::proto::ModelRequest{"b"}).model;
    // A's prompt plus its one generated token must fit A's context and the KV pool we gave it.
    const int room = std::min(a.context_length > 0 ? a.context_length : prompt_a + 1, kv_tokens) - 1;
    if (prompt_a > room) {
      std::printf("cross_model: --prompt-a %d does not fit (A's context %d, --kv-tokens %d): clamped to %d\n", prompt_a,
                  a.context_length, kv_tokens, room);
      prompt_a = room;
    }
    std::printf("cross_model: A = %s (%s, %d layers, dim %d, context %d, device %s)\n", model_a.c_str(),
                a.architecture.c_str(), a.n_layers, a.dim, a.context_length, a.device.c_str());
    std::printf("cross_model: B = %s (%s, %d layers, dim %d, device %s)\n", model_b.c_str(), b.architecture.c_str(),
                b.n_layers, b.dim, b.device.c_str());
    std::string extras = " --kv-tokens " + std::to_string(kv_tokens);
    for (const auto& e : extra) extras += " " + e;
    std::printf("cross_model: A prefills %d tokens (max_tokens 1), B decodes %d tokens greedily, %d rounds, "
                "daemon args:%s\n",
                prompt_a, tokens_b, rounds, extras.c_str());

    ItlStats alone_all, contended_all, overlapped_all;
    std::vector<double> ratios, a_alone_ms, a_contended_ms;
    for (int round = 0; round < rounds; ++round) {
      // Alone: B with nothing else running, then A's prefill with nothing else running.
      const Trace b_alone = run_request(conn_b, b_request(tokens_b));
      const Trace a_alone = run_request(conn_a, a_request(prompt_a, a.vocab_size, salt++));
      // Contended: A's prefill starts; once the daemon has scheduled it, B decodes as it did alone.
      std::promise<void> a_started;
      auto a_future = std::async(std::launch::async, [&] {
        return run_request(conn_a, a_request(prompt_a, a.vocab_size, salt++), [&] { a_started.set_value(); });
      });
      a_started.get_future().wait();
      const Trace b_cont = run_request(conn_b, b_request(tokens_b));
      const Trace a_cont = a_future.get();
      // B's gaps that lay wholly within A's prefill: after A was scheduled, before A's first token.
      const Clock::time_point a_begin = a_cont.saw_scheduled ? a_cont.scheduled : a_cont.sent;
      std::vector<double> overlapped;
      for (size_t i = 1; i < b_cont.token_events.size(); ++i) {
        if (b_cont.token_events[i - 1] >= a_begin && b_cont.token_events[i] <= a_cont.first_token) {
          overlapped.push_back(ms_between(b_cont.token_events[i - 1], b_cont.token_events[i]));
        }
      }
      ItlStats alone{b_alone.gaps()}, contended{b_cont.gaps()}, over{overlapped};
      const double ratio = percentile(contended.gaps, 99) / std::max(percentile(alone.gaps, 99), 1e-9);
      std::printf("round %d:\n", round + 1);
      alone.print("alone");
      contended.print("contended");
      over.print("overlapped");
      std::printf("  B p99 ratio contended/alone %.2f\n", ratio);
      std::printf("  B tokens alone %lld in %zu events (%d in the same read as the one before), contended %lld in %zu "
                  "events (%d same read)\n",
                  static_cast<long long>(b_alone.tokens), b_alone.token_events.size(), b_alone.buffered_token_events,
                  static_cast<long long>(b_cont.tokens), b_cont.token_events.size(), b_cont.buffered_token_events);
      std::printf("  B decode total (send to finished) alone %.1f ms, contended %.1f ms\n",
                  ms_between(b_alone.sent, b_alone.finished), ms_between(b_cont.sent, b_cont.finished));
      std::printf("  A prefill (send to first token) alone %.1f ms, contended %.1f ms\n", a_alone.ttft_ms(),
                  a_cont.ttft_ms());
      std::printf("  B gaps overlapping A's prefill %zu of %zu\n", overlapped.size(), contended.gaps.size());
      ratios.push_back(ratio);
      a_alone_ms.push_back(a_alone.ttft_ms());
      a_contended_ms.push_back(a_cont.ttft_ms());
      alone_all.gaps.insert(alone_all.gaps.end(), alone.gaps.begin(), alone.gaps.end());
      contended_all.gaps.insert(contended_all.gaps.end(), contended.gaps.begin(), contended.gaps.end());
      overlapped_all.gaps.insert(overlapped_all.gaps.end(), overlapped.begin(), overlapped.end());
    }
    std::printf("overall (%d rounds, gaps pooled):\n", rounds);
    alone_all.print("alone");
    contended_all.print("contended");
    overlapped_all.print("overlapped");
    std::printf("  B p99 ratio contended/alone %.2f (pooled); per round min %.2f max %.2f\n",
                percentile(contended_all.gaps, 99) / std::max(percentile(alone_all.gaps, 99), 1e-9),
                *std::min_element(ratios.begin(), ratios.end()), *std::max_element(ratios.begin(), ratios.end()));
    std::printf("  A prefill median alone %.1f ms, contended %.1f ms\n", percentile(a_alone_ms, 50),
                percentile(a_contended_ms, 50));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cross_model: %s\n", e.what());
    rc = 1;
  }
  cleanup();
  std::printf("cross_model: load at end %s\n", loadavg().c_str());
  return rc;
}
