// `vkstream bench`: a load generator through the real daemon. Several connections, a bound on the
// requests in flight, Poisson arrivals, prompt/output length distributions; prints throughput and
// TTFT / inter-token latency percentiles and the draft tokens verified and accepted (speculative
// decoding), optionally every request as CSV or JSON.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "clients/cli/bench_stats.h"
#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"

namespace vks::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  ConnectionFlags conn;
  int32_t requests = 32;
  int32_t clients = 4;
  int32_t concurrency = 0;  // 0 = clients
  double rate = 0;          // requests/s; 0 = closed loop
  std::string prompt_len = "32";
  std::string output_len = "32";
  double temperature = 0;
  uint64_t seed = 1;
  std::string csv;
  std::string json;
  bool quiet = false;
  std::optional<int32_t> speculative;  // the request field; unset: the daemon's setting
};

struct Planned {
  double arrival_s = 0;
  std::vector<int32_t> prompt_ids;
  int32_t max_tokens = 0;
};

struct RequestRecord {
  size_t index = 0;
  std::string id;
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;
  double arrival_s = 0;   // planned
  double start_s = 0;     // when it was sent
  double ttft_ms = -1;
  double e2e_ms = 0;
  std::vector<double> itl_ms;
  int32_t draft_tokens = 0, accepted_tokens = 0;  // speculative decoding (finished.timings)
  std::string finish_reason;
  std::string error;
};

struct Shared {
  const std::vector<Planned>* plan = nullptr;
  Clock::time_point t0;
  std::atomic<size_t> next{0};
  std::atomic<size_t> finished{0};
  std::atomic<size_t> tokens{0};
  std::mutex mu;
  std::vector<RequestRecord> records;  // under mu
};

double seconds_since(Clock::time_point t0, Clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); }

// One connection: keeps up to `limit` requests in flight, sending each at its planned arrival.
void run_connection(const BenchArgs& args, Shared& shared, int32_t limit, std::string* failure) {
  try {
    vkstream::Client client = args.conn.connect();
    struct Live {
      RequestRecord rec;
      Clock::time_point sent;
      Clock::time_point last_token;
    };
    std::map<std::string, Live> live;
    std::optional<size_t> held;  // claimed, waiting for its arrival time
    const std::vector<Planned>& plan = *shared.plan;
    for (;;) {
      // Start what is due.
      while (static_cast<int32_t>(live.size()) < limit) {
        if (!held) {
          const size_t i = shared.next.fetch_add(1);
          if (i >= plan.size()) break;
          held = i;
        }
        const Planned& p = plan[*held];
        const auto due = shared.t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(p.arrival_s));
        if (Clock::now() < due) break;
        vkstream::GenerateOptions o;
        o.prompt_ids = p.prompt_ids;
        o.max_tokens = p.max_tokens;
        o.ignore_eos = true;  // exact output lengths
        o.temperature = args.temperature;
        o.seed = args.seed + *held;
        o.speculative = args.speculative;
        Live l;
        l.rec.index = *held;
        l.rec.prompt_tokens = static_cast<int32_t>(p.prompt_ids.size());
        l.rec.arrival_s = p.arrival_s;
        l.sent = Clock::now();
        l.rec.start_s = seconds_since(shared.t0, l.sent);
        held.reset();
        try {
          const vkstream::Accepted acc = client.submit(o);
          l.rec.id = acc.id;
          live.emplace(acc.id, std::move(l));
        } catch (const vkstream::ServerError& e) {
          l.rec.error = e.code();
          std::lock_guard<std::mutex> lock(shared.mu);
          shared.records.push_back(std::move(l.rec));
          shared.finished.fetch_add(1);
        }
      }
      if (live.empty() && !held) {
        if (shared.next.load() >= plan.size()) return;
        continue;
      }
      auto wait = std::chrono::milliseconds(50);
      if (held) {
        const auto due = shared.t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(plan[*held].arrival_s));
        wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(due - Clock::now()),
                          std::chrono::milliseconds(0), wait);
      }
      if (live.empty()) {
        std::this_thread::sleep_for(wait);
        continue;
      }
      std::optional<vkstream::Event> ev = client.next_any_event(wait);
      if (!ev) continue;
      auto it = live.find(ev->id);
      if (it == live.end()) continue;
      Live& l = it->second;
      const auto now = ev->received_at;
      if (ev->kind == vkstream::EventKind::kToken && !ev->ids.empty()) {
        const double n = static_cast<double>(ev->ids.size());
        if (l.rec.ttft_ms < 0) {
          l.rec.ttft_ms = std::chrono::duration<double, std::milli>(now - l.sent).count();
        } else {
          const double gap = std::chrono::duration<double, std::milli>(now - l.last_token).count();
          for (size_t k = 0; k < ev->ids.size(); ++k) l.rec.itl_ms.push_back(gap / n);
        }
        l.last_token = now;
        l.rec.output_tokens += static_cast<int32_t>(ev->ids.size());
        shared.tokens.fetch_add(ev->ids.size());
      } else if (ev->kind == vkstream::EventKind::kError) {
        l.rec.error = ev->error_code;
      } else if (ev->kind == vkstream::EventKind::kFinished) {
        l.rec.finish_reason = ev->finish_reason;
        l.rec.draft_tokens = ev->timings.draft_tokens;
        l.rec.accepted_tokens = ev->timings.accepted_tokens;
        l.rec.e2e_ms = std::chrono::duration<double, std::milli>(now - l.sent).count();
        {
          std::lock_guard<std::mutex> lock(shared.mu);
          shared.records.push_back(std::move(l.rec));
        }
        live.erase(it);
        shared.finished.fetch_add(1);
      }
    }
  } catch (const std::exception& e) {
    *failure = e.what();
    shared.next.store(shared.plan->size());  // stop the other connections from starting more
  }
}

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

void print_summary_line(std::ostream& out, const char* name, const LatencySummary& s) {
  out << "  " << name << " (ms): p50 " << fixed2(s.p50) << "  p90 " << fixed2(s.p90) << "  p99 "
      << fixed2(s.p99) << "  mean " << fixed2(s.mean) << "  max " << fixed2(s.max) << "  (n=" << s.count << ")\n";
}

vkstream::Value summary_json(const LatencySummary& s) {
  return vkstream::Value::Map{{"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"mean", s.mean}, {"max", s.max},
                              {"count", static_cast<uint64_t>(s.count)}};
}

int run_bench(BenchArgs& a) {
  std::string err;
  const auto prompt_dist = LengthDistribution::parse(a.prompt_len, &err);
  if (!prompt_dist) throw CLI::ValidationError("--prompt-len", err);
  const auto output_dist = LengthDistribution::parse(a.output_len, &err);
  if (!output_dist) throw CLI::ValidationError("--output-len", err);
  const int32_t concurrency = a.concurrency > 0 ? a.concurrency : a.clients;
  const int32_t connections = std::min(a.clients, concurrency);

  // The vocabulary size bounds the random prompt ids.
  int64_t vocab = 0;
  {
    vkstream::Client probe = a.conn.connect();
    const vkstream::Hello h = probe.hello();
    vocab = h.model.get_int("vocab_size", 0);
  }
  if (vocab <= 4) vocab = 256;
  std::mt19937_64 rng(a.seed);
  std::vector<Planned> plan(static_cast<size_t>(a.requests));
  const std::vector<double> arrivals = poisson_arrivals(plan.size(), a.rate, rng);
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(vocab - 1));  // skip unk/bos/eos
  for (size_t i = 0; i < plan.size(); ++i) {
    plan[i].arrival_s = arrivals[i];
    plan[i].prompt_ids.resize(static_cast<size_t>(prompt_dist->sample(rng)));
    for (int32_t& id : plan[i].prompt_ids) id = token(rng);
    plan[i].max_tokens = output_dist->sample(rng);
  }

  std::cerr << "bench: " << a.requests << " requests over " << connections << " connections, concurrency "
            << concurrency << ", " << (a.rate > 0 ? "Poisson rate " + fixed2(a.rate) + "/s" : std::string("closed loop"))
            << ", prompt " << prompt_dist->describe() << ", output " << output_dist->describe() << " tokens\n";

  Shared shared;
  shared.plan = &plan;
  shared.t0 = Clock::now();
  std::vector<std::string> failures(static_cast<size_t>(connections));
  std::vector<std::thread> threads;
  for (int32_t c = 0; c < connections; ++c) {
    const int32_t limit = concurrency / connections + (c < concurrency % connections ? 1 : 0);
    threads.emplace_back(run_connection, std::cref(a), std::ref(shared), limit, &failures[static_cast<size_t>(c)]);
  }
  const bool tty = ::isatty(STDERR_FILENO) != 0 && !a.quiet;
  while (shared.finished.load() < plan.size()) {
    bool any_failed = false;
    for (const std::string& f : failures) any_failed = any_failed || !f.empty();
    if (any_failed) break;
    if (tty) {
      const double el = seconds_since(shared.t0, Clock::now());
      std::cerr << "\r" << progress_bar(shared.finished.load(), plan.size(), 30) << " " << shared.finished.load() << "/"
                << plan.size() << " requests, " << shared.tokens.load() << " tokens, " << fixed2(el) << " s" << std::flush;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(tty ? 200 : 50));
  }
  for (std::thread& t : threads) t.join();
  if (tty) std::cerr << "\r" << std::string(80, ' ') << "\r";
  const double elapsed = seconds_since(shared.t0, Clock::now());
  for (const std::string& f : failures) {
    if (!f.empty()) throw vkstream::ClientError(vkstream::ErrorKind::kTransport, "a bench connection failed: " + f);
  }

  std::vector<RequestRecord>& recs = shared.records;
  std::sort(recs.begin(), recs.end(), [](const RequestRecord& x, const RequestRecord& y) { return x.index < y.index; });
  std::vector<double> ttft, itl, e2e;
  size_t ok = 0, out_tokens = 0, in_tokens = 0;
  int64_t drafted = 0, accepted = 0;
  for (const RequestRecord& r : recs) {
    if (!r.error.empty() || r.finish_reason == "error") continue;
    ++ok;
    out_tokens += static_cast<size_t>(r.output_tokens);
    in_tokens += static_cast<size_t>(r.prompt_tokens);
    drafted += r.draft_tokens;
    accepted += r.accepted_tokens;
    if (r.ttft_ms >= 0) ttft.push_back(r.ttft_ms);
    itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
    e2e.push_back(r.e2e_ms);
  }
  const LatencySummary s_ttft = summarize(ttft), s_itl = summarize(itl), s_e2e = summarize(e2e);
  const double req_per_s = static_cast<double>(ok) / elapsed;
  const double out_tok_per_s = static_cast<double>(out_tokens) / elapsed;
  const double total_tok_per_s = static_cast<double>(out_tokens + in_tokens) / elapsed;

  std::cout << "requests: " << ok << " ok, " << (recs.size() - ok) << " failed, in " << fixed2(elapsed) << " s\n"
            << "throughput: " << fixed2(req_per_s) << " req/s, " << fixed2(out_tok_per_s) << " output tok/s, "
            << fixed2(total_tok_per_s) << " total tok/s (prompt " << in_tokens << ", output " << out_tokens << " tokens)\n";
  print_summary_line(std::cout, "TTFT       ", s_ttft);
  print_summary_line(std::cout, "inter-token", s_itl);
  print_summary_line(std::cout, "end-to-end ", s_e2e);
  std::cout << "speculative: " << drafted << " draft tokens verified, " << accepted << " accepted";
  if (drafted > 0) std::cout << " (" << fixed2(100.0 * static_cast<double>(accepted) / static_cast<double>(drafted)) << "%)";
  std::cout << '\n';

  if (!a.csv.empty()) {
    std::ofstream f(a.csv);
    if (!f) throw vkstream::ClientError(vkstream::ErrorKind::kUsage, "cannot write " + a.csv);
    f << "index,id,prompt_tokens,output_tokens,arrival_s,start_s,ttft_ms,e2e_ms,mean_itl_ms,draft_tokens,accepted_tokens,"
         "finish_reason,error\n";
    for (const RequestRecord& r : recs) {
      f << r.index << ',' << r.id << ',' << r.prompt_tokens << ',' << r.output_tokens << ',' << r.arrival_s << ','
        << r.start_s << ',' << r.ttft_ms << ',' << r.e2e_ms << ',' << summarize(r.itl_ms).mean << ','
        << r.draft_tokens << ',' << r.accepted_tokens << ',' << r.finish_reason << ',' << r.error << '\n';
    }
  }
  if (!a.json.empty()) {
    vkstream::Value::Array rows;
    for (const RequestRecord& r : recs) {
      rows.emplace_back(vkstream::Value::Map{
          {"index", static_cast<uint64_t>(r.index)}, {"id", r.id}, {"prompt_tokens", r.prompt_tokens},
          {"output_tokens", r.output_tokens}, {"arrival_s", r.arrival_s}, {"start_s", r.start_s},
          {"ttft_ms", r.ttft_ms}, {"e2e_ms", r.e2e_ms}, {"mean_itl_ms", summarize(r.itl_ms).mean},
          {"draft_tokens", r.draft_tokens}, {"accepted_tokens", r.accepted_tokens},
          {"finish_reason", r.finish_reason}, {"error", r.error}});
    }
    vkstream::Value doc = vkstream::Value::Map{
        {"requests_ok", static_cast<uint64_t>(ok)}, {"requests_failed", static_cast<uint64_t>(recs.size() - ok)},
        {"elapsed_s", elapsed}, {"requests_per_s", req_per_s}, {"output_tokens_per_s", out_tok_per_s},
        {"total_tokens_per_s", total_tok_per_s}, {"ttft_ms", summary_json(s_ttft)}, {"itl_ms", summary_json(s_itl)},
        {"e2e_ms", summary_json(s_e2e)}, {"draft_tokens", drafted}, {"accepted_tokens", accepted},
        {"requests", vkstream::Value(std::move(rows))}};
    std::ofstream f(a.json);
    if (!f) throw vkstream::ClientError(vkstream::ErrorKind::kUsage, "cannot write " + a.json);
    f << doc.to_json() << '\n';
  }
  return ok == recs.size() ? kExitOk : kExitError;
}

}  // namespace

void add_bench_command(CLI::App& root, int& exit_code) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* b = root.add_subcommand("bench", "Load generator through the running daemon");
  a->conn.add_to(*b);
  b->add_option("-N,--requests", a->requests, "requests to send")->check(CLI::Range(1, 1'000'000));
  b->add_option("-c,--clients", a->clients, "connections to the daemon")->check(CLI::Range(1, 1024));
  b->add_option("--concurrency", a->concurrency, "requests in flight at most (default: one per client)")
      ->check(CLI::Range(0, 65536));
  b->add_option("-r,--rate", a->rate, "arrival rate in requests/s, Poisson (0 = closed loop)")->check(CLI::Range(0.0, 1e6));
  b->add_option("--prompt-len", a->prompt_len, "prompt tokens: N, A:B, normal:M:S or exp:M");
  b->add_option("--output-len", a->output_len, "output tokens: N, A:B, normal:M:S or exp:M");
  b->add_option("-t,--temperature", a->temperature, "sampling temperature (0 = greedy)")->check(CLI::Range(0.0, 100.0));
  b->add_option("-s,--seed", a->seed, "seed of the workload (prompts, lengths, arrivals)");
  b->add_option("--csv", a->csv, "write one row per request to this CSV file");
  b->add_option("--json", a->json, "write the summary and every request to this JSON file");
  b->add_option("--speculative", a->speculative,
                 "speculative decoding per request where the daemon runs it: 0 = off, 1..16 = the most tokens "
                 "drafted a step (default: the daemon's setting)")
      ->check(CLI::Range(0, 16));
  b->add_flag("-q,--quiet", a->quiet, "no progress bar");
  b->callback([a, &exit_code] { exit_code = guarded("bench", [&] { return run_bench(*a); }); });
}

}  // namespace vks::cli
