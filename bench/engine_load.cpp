// In-process load generator for the engine: N requests with Poisson arrivals and uniform prompt and
// output length distributions, printing throughput, TTFT and inter-token latency percentiles; and a
// prefix-cache run (requests sharing a long prefix) with the cache on and off. Each row ends with the
// engine's mean step (a loop turn that ran the model: scheduling, batch, runner, sampling, stops,
// events) against the runner's own share of it, measured in the same run (eng/run: the overhead).
//   engine_load MODEL.gguf [--requests 64] [--rate 8] [--prompt-min 16 --prompt-max 256]
//               [--out-min 16 --out-max 128] [--cpu] [--prefix-only | --no-prefix]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "engine/vulkan/runner/runner_factory.h"

namespace {

using Clock = std::chrono::steady_clock;
using vks::EngineEvent;
using vks::EventType;

struct Options {
  std::string model;
  int requests = 64;
  double rate = 8.0;  // requests per second, 0 = all at once
  int prompt_min = 16, prompt_max = 256;
  int out_min = 16, out_max = 128;
  int max_seqs = 16, max_batched_tokens = 256;
  int kv_blocks = 0;
  bool cpu = false;
  std::string device;
  uint64_t seed = 1;
  bool prefix_only = false, no_prefix = false;
  int prefix_requests = 32, prefix_len = 512, suffix_len = 16, prefix_out = 32;
};

struct Trace {
  Clock::time_point submitted, first, last;
  std::vector<double> itl_ms;
  int generated = 0;
  bool done = false;
};

struct RunResult {
  double wall_s = 0;
  int64_t prompt_tokens = 0, generated = 0;
  std::vector<double> ttft_ms, itl_ms;
  vks::EngineStats stats;
  int errors = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double idx = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(idx);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
}

std::unique_ptr<vks::ModelRunner> make_runner(const vks::LlamaModel& model, const Options& o) {
  vks::RunnerOptions ro;
  ro.force_cpu = o.cpu;
  ro.force_vulkan = !o.cpu;  // the bench measures the backend it names, not the rule's pick
  ro.device = o.device;
  ro.num_blocks = o.kv_blocks;
  ro.max_step_tokens = std::max(o.max_batched_tokens, 16);
  ro.max_step_seqs = std::max(o.max_seqs, 1);
  return vks::make_runner(model, ro);
}

// Submits each request at its arrival time and drains events until all finished.
RunResult run(const vks::LlamaModel& model, const vks::Tokenizer& tok, const Options& o,
              const std::vector<vks::GenerateRequest>& reqs, const std::vector<double>& arrivals_s,
              bool prefix_caching, std::string* device) {
  vks::EngineConfig cfg;
  cfg.max_seqs = o.max_seqs;
  cfg.max_batched_tokens = o.max_batched_tokens;
  cfg.max_queued = static_cast<int32_t>(reqs.size()) + 1;
  cfg.prefix_caching = prefix_caching;
  vks::Engine engine(make_runner(model, o), tok, cfg);
  if (device) *device = engine.device_name();
  std::mutex mu;
  std::condition_variable cv;
  bool pinged = false;
  engine.set_event_notifier([&] {
    std::lock_guard lock(mu);
    pinged = true;
    cv.notify_one();
  });

  std::map<std::string, Trace> traces;
  std::mutex traces_mu;
  RunResult res;
  const auto start = Clock::now();
  std::thread submitter([&] {
    for (size_t i = 0; i < reqs.size(); ++i) {
      std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(arrivals_s[i])));
      const auto t = Clock::now();
      std::lock_guard lock(traces_mu);  // held across submit so the trace exists before its events
      const vks::SubmitResult s = engine.submit(reqs[i]);
      if (!s.ok) {
        std::fprintf(stderr, "submit failed: %s\n", s.message.c_str());
        ++res.errors;
        continue;
      }
      traces[s.id].submitted = t;
      res.prompt_tokens += s.prompt_tokens;
    }
  });
  size_t finished = 0;
  std::vector<EngineEvent> ev;
  while (finished + static_cast<size_t>(res.errors) < reqs.size()) {
    {
      std::unique_lock lock(mu);
      cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return pinged; });
      pinged = false;
    }
    ev.clear();
    engine.poll_events(ev);
    const auto now = Clock::now();
    std::lock_guard lock(traces_mu);
    for (const EngineEvent& e : ev) {
      Trace& t = traces[e.request_id];
      if (e.type == EventType::kFirstToken || e.type == EventType::kToken) {
        const int n = static_cast<int>(e.tokens.size());
        if (n == 0) continue;
        if (t.generated == 0) {
          t.first = now;
        } else {
          t.itl_ms.push_back(std::chrono::duration<double, std::milli>(now - t.last).count());
        }
        t.last = now;
        t.generated += n;
      } else if (e.type == EventType::kFinished) {
        t.done = true;
        ++finished;
        if (e.reason == vks::FinishReason::kError) ++res.errors;
      }
    }
  }
  submitter.join();
  res.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& [id, t] : traces) {
    res.generated += t.generated;
    if (t.generated > 0) res.ttft_ms.push_back(std::chrono::duration<double, std::milli>(t.first - t.submitted).count());
    res.itl_ms.insert(res.itl_ms.end(), t.itl_ms.begin(), t.itl_ms.end());
  }
  res.stats = engine.stats();
  return res;
}

std::vector<int32_t> random_tokens(std::mt19937_64& rng, int n, int32_t vocab) {
  std::vector<int32_t> t;
  std::uniform_int_distribution<int32_t> d(3, vocab - 1);  // no control tokens
  for (int i = 0; i < n; ++i) t.push_back(d(rng));
  return t;
}

void print_row(const char* name, const RunResult& r) {
  const double hit = r.stats.prefix_query_tokens ? 100.0 * static_cast<double>(r.stats.prefix_hit_tokens) /
                                                       static_cast<double>(r.stats.prefix_query_tokens)
                                                 : 0.0;
  const double steps = static_cast<double>(std::max<int64_t>(r.stats.steps, 1));
  const double step_ms = r.stats.step_ms_total / steps, runner_ms = r.stats.runner_ms_total / steps;
  std::printf("%-22s %8.2f %9lld %9lld %10.1f %10.1f %9.1f %9.1f %8.2f %8.2f %7lld %6.1f%% %4d %8.2f %9.2f %7.3f\n",
              name, r.wall_s,
              static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.generated),
              static_cast<double>(r.generated) / r.wall_s,
              static_cast<double>(r.prompt_tokens + r.generated) / r.wall_s, percentile(r.ttft_ms, 50),
              percentile(r.ttft_ms, 99), percentile(r.itl_ms, 50), percentile(r.itl_ms, 99),
              static_cast<long long>(r.stats.preemptions), hit, r.errors, step_ms, runner_ms,
              runner_ms > 0 ? step_ms / runner_ms : 0.0);
}

void print_header() {
  std::printf("%-22s %8s %9s %9s %10s %10s %9s %9s %8s %8s %7s %7s %4s %8s %9s %7s\n", "run", "wall_s", "prompt",
              "generated", "gen_tok/s", "all_tok/s", "ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "preempt", "hit",
              "err", "step_ms", "runner_ms", "eng/run");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"vkstream engine load generator (in-process)"};
  app.add_option("model", o.model, "GGUF model file")->required();
  app.add_option("--requests", o.requests, "requests in the load run");
  app.add_option("--rate", o.rate, "Poisson arrival rate, requests/s (0 = all at once)");
  app.add_option("--prompt-min", o.prompt_min);
  app.add_option("--prompt-max", o.prompt_max);
  app.add_option("--out-min", o.out_min);
  app.add_option("--out-max", o.out_max);
  app.add_option("--max-seqs", o.max_seqs);
  app.add_option("--max-batched-tokens", o.max_batched_tokens);
  app.add_option("--kv-blocks", o.kv_blocks, "KV blocks (0 = runner default)");
  app.add_flag("--cpu", o.cpu, "use the CPU runner");
  app.add_option("--device", o.device, "Vulkan device index or name substring");
  app.add_option("--seed", o.seed);
  app.add_flag("--prefix-only", o.prefix_only, "only the prefix-cache run");
  app.add_flag("--no-prefix", o.no_prefix, "skip the prefix-cache run");
  app.add_option("--prefix-requests", o.prefix_requests);
  app.add_option("--prefix-len", o.prefix_len);
  app.add_option("--suffix-len", o.suffix_len);
  app.add_option("--prefix-out", o.prefix_out, "output tokens per request in the prefix run");
  CLI11_PARSE(app, argc, argv);
  if (o.prompt_min < 1 || o.prompt_max < o.prompt_min || o.out_min < 1 || o.out_max < o.out_min || o.requests < 1) {
    std::fprintf(stderr, "error: need 1 <= prompt-min <= prompt-max, 1 <= out-min <= out-max, requests >= 1\n");
    return 2;
  }
  try {
    auto model = vks::LlamaModel::load(o.model);
    auto tok = vks::Tokenizer::from_gguf(model->file());
    const int32_t vocab = static_cast<int32_t>(model->config().vocab_size);
    std::mt19937_64 rng(o.seed);
    std::string device;
    bool header = false;

    if (!o.prefix_only) {
      std::vector<vks::GenerateRequest> reqs;
      std::vector<double> arrivals;
      std::exponential_distribution<double> gap(o.rate > 0 ? o.rate : 1.0);
      std::uniform_int_distribution<int> plen(o.prompt_min, o.prompt_max), olen(o.out_min, o.out_max);
      double t = 0;
      for (int i = 0; i < o.requests; ++i) {
        vks::GenerateRequest r;
        r.prompt_ids = {tok->bos()};
        const auto body = random_tokens(rng, plen(rng) - 1, vocab);
        r.prompt_ids.insert(r.prompt_ids.end(), body.begin(), body.end());
        r.stop.max_tokens = olen(rng);
        r.stop.ignore_eos = true;
        r.sampling.temperature = 0.8f;
        r.sampling.seed = rng();
        r.logprobs = -1;
        reqs.push_back(std::move(r));
        arrivals.push_back(t);
        if (o.rate > 0) t += gap(rng);
      }
      const RunResult r = run(*model, *tok, o, reqs, arrivals, true, &device);
      std::printf("model %s, device %s, %d requests, rate %.1f/s, prompt %d..%d, output %d..%d, max_seqs %d, "
                  "max_batched_tokens %d (latencies in ms)\n",
                  o.model.c_str(), device.c_str(), o.requests, o.rate, o.prompt_min, o.prompt_max, o.out_min,
                  o.out_max, o.max_seqs, o.max_batched_tokens);
      print_header();
      header = true;
      print_row("load", r);
    }
    if (!o.no_prefix) {
      const auto prefix = random_tokens(rng, o.prefix_len - 1, vocab);
      std::vector<vks::GenerateRequest> reqs;
      for (int i = 0; i < o.prefix_requests; ++i) {
        vks::GenerateRequest r;
        r.prompt_ids = {tok->bos()};
        r.prompt_ids.insert(r.prompt_ids.end(), prefix.begin(), prefix.end());
        const auto suffix = random_tokens(rng, o.suffix_len, vocab);
        r.prompt_ids.insert(r.prompt_ids.end(), suffix.begin(), suffix.end());
        r.stop.max_tokens = o.prefix_out;
        r.stop.ignore_eos = true;
        r.sampling.temperature = 0;
        r.logprobs = -1;
        reqs.push_back(std::move(r));
      }
      // All arrive at once: chunked prefill computes the prefix once, later admissions hit it.
      const std::vector<double> arrivals(reqs.size(), 0.0);
      const RunResult on = run(*model, *tok, o, reqs, arrivals, true, &device);
      const RunResult off = run(*model, *tok, o, reqs, arrivals, false, &device);
      std::printf("%sprefix run: %d requests sharing a %d-token prefix (+%d own tokens), %d output tokens each, "
                  "device %s\n",
                  header ? "\n" : "", o.prefix_requests, o.prefix_len, o.suffix_len, o.prefix_out, device.c_str());
      print_header();
      print_row("prefix cache on", on);
      print_row("prefix cache off", off);
    }
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
