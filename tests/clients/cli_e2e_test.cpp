// The `vkstream` CLI against the real vkstreamd on stories260K, and its answer when no daemon runs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "engine/common/cpu_count.h"
#include "engine/gguf/file_residence.h"
#include "tests/clients/process_util.h"
#include "tests/clients/reference.h"
#include "tests/common/test_models.h"

namespace {

using vks::test::Daemon;
using vks::test::ProcessResult;

std::string vkstream_exe() { return vks::test::build_dir() + "/clients/cli/vkstream"; }

class CliE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = new Daemon(); }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  // vkstream <command> --socket <daemon> <args...>
  static ProcessResult cli(const std::string& command, std::vector<std::string> args, const std::string& input = {}) {
    std::vector<std::string> argv = {vkstream_exe(), command};
    for (const std::string& f : daemon_->cli_flags()) argv.push_back(f);
    argv.insert(argv.end(), args.begin(), args.end());
    return vks::test::run_process(argv, input, 60);
  }
  static Daemon* daemon_;
  const vks::test::GreedyReference ref_ = vks::test::load_greedy_reference();
};
Daemon* CliE2E::daemon_ = nullptr;

size_t count_lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST_F(CliE2E, GenerateGreedyPrintsTheReferenceText) {
  const ProcessResult r = cli("generate", {"--greedy", "-n", "60", "--echo", vks::test::kReferencePrompt});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ref_.text);
}

// Issue 33: what the daemon serves and has loaded, and a request naming its model.
TEST_F(CliE2E, ModelsLoadedAndGenerateByModelName) {
  const ProcessResult loaded = cli("models", {"--loaded"});
  EXPECT_EQ(loaded.exit_code, 0) << loaded.err;
  EXPECT_NE(loaded.out.find("stories260K *"), std::string::npos) << loaded.out;  // the default
  EXPECT_NE(loaded.out.find("pinned"), std::string::npos) << loaded.out;
  EXPECT_NE(loaded.out.find("never"), std::string::npos) << loaded.out;  // a pinned model never unloads
  const ProcessResult by_name =
      cli("generate", {"--greedy", "-n", "60", "--echo", "--model", "stories260K", vks::test::kReferencePrompt});
  EXPECT_EQ(by_name.exit_code, 0) << by_name.err;
  EXPECT_EQ(by_name.out, ref_.text);
  const ProcessResult unknown = cli("generate", {"-n", "4", "--model", "no-such-model", "hi"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("no-such-model"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("stories260K"), std::string::npos) << unknown.err;
}

// Issue 37: a generation cut off by its deadline (or cancelled by another client) exited 0, so a
// script took the partial text for a complete answer. It exits 4, as `vkstream --help` says.
TEST_F(CliE2E, GenerateCutOffByItsDeadlineExits4) {
  const ProcessResult r = cli("generate", {"--greedy", "--ignore-eos", "--deadline-ms", "1", "Once"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("deadline"), std::string::npos) << r.err;
  const ProcessResult help = vks::test::run_process({vkstream_exe(), "--help"}, "", 30);
  EXPECT_NE(help.out.find("4 the request was cancelled elsewhere or hit its deadline"), std::string::npos) << help.out;
}

TEST_F(CliE2E, GenerateOverZeroMqWithPromptFromStdin) {
  const std::vector<std::string> argv = {vkstream_exe(), "generate", "--zmq", "ipc://" + daemon_->dir() + "/router.zmq",
                                         "--temperature", "0", "--max-tokens", "60", "-"};
  const ProcessResult r = vks::test::run_process(argv, vks::test::kReferencePrompt, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::string(vks::test::kReferencePrompt) + r.out, ref_.text);
}

TEST_F(CliE2E, GenerateJsonPrintsOneEventPerLine) {
  const ProcessResult r = cli("generate", {"--greedy", "-n", "8", "--json", vks::test::kReferencePrompt});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line, last;
  size_t n = 0, tokens = 0;
  while (std::getline(lines, line)) {
    ++n;
    EXPECT_EQ(line.front(), '{');
    EXPECT_EQ(line.back(), '}');
    if (n == 1) {
      EXPECT_NE(line.find("\"type\":\"accepted\""), std::string::npos) << line;
    }
    if (line.find("\"type\":\"token\"") != std::string::npos) ++tokens;
    last = line;
  }
  EXPECT_GE(tokens, 1u);
  EXPECT_NE(last.find("\"type\":\"finished\""), std::string::npos) << last;
  EXPECT_NE(last.find("\"reason\":\"length\""), std::string::npos) << last;
}

TEST_F(CliE2E, LogprobsTableKeepsEachWordsLeadingSpace) {
  // Greedy stories260K continues with whole words ("▁there", "▁was"...); decoding such a piece
  // alone drops its space, so at least one row would start with a bare quote-letter without it.
  const ProcessResult r = cli("generate", {"--greedy", "-n", "6", "--logprobs", "1", "Once upon a time"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t table = r.out.find("logprobs (");
  ASSERT_NE(table, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  \" there\" (", table), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  \" was\" (", table), std::string::npos) << r.out;
}

TEST_F(CliE2E, StopStringEndsTheGenerationBeforeIt) {
  const ProcessResult r = cli("generate", {"--greedy", "-n", "60", "--stop", "Lily", vks::test::kReferencePrompt});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The reference continuation reads ", there was a little girl named Lily. ..."
  EXPECT_EQ(r.out, ", there was a little girl named \n");
}

TEST_F(CliE2E, TokenizeStatusFollowAndStats) {
  ProcessResult r = cli("tokenize", {vks::test::kReferencePrompt});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");

  r = cli("generate", {"--greedy", "-n", "60", "--id", "cli-follow-1", vks::test::kReferencePrompt});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string generated = r.out;

  r = cli("status", {"cli-follow-1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("state: finished"), std::string::npos) << r.out;

  r = cli("follow", {"cli-follow-1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, generated);

  r = cli("stats", {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tokens_generated"), std::string::npos) << r.out;
  r = cli("stats", {"--prometheus"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vkstream_"), std::string::npos) << r.out;

  // --json answers are one line each, newline-terminated, so `| jq` and line readers see them whole.
  for (const char* command : {"model", "hello", "stats"}) {
    r = cli(command, {"--json"});
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    ASSERT_GE(r.out.size(), 3u) << command;
    EXPECT_EQ(r.out.substr(r.out.size() - 2), "}\n") << command << ": " << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << command << ": " << r.out;
  }
  // Its text names the CPU backend's kernel level, lowered by VKSTREAM_CPU_ISA.
  ::setenv("VKSTREAM_CPU_ISA", "scalar", 1);
  r = vks::test::run_process({vkstream_exe(), "devices"}, "", 60);
  ::unsetenv("VKSTREAM_CPU_ISA");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("CPU backend kernels: scalar"), std::string::npos) << r.out;
  // The CPU backend's default thread count, and why.
  const vks::CpuCount threads = vks::default_cpu_threads();
  EXPECT_NE(r.out.find("CPU backend threads: " + std::to_string(threads.threads) + " (" + threads.why), std::string::npos)
      << r.out;
  // And where the CPU backend's weights live, with the kernel's huge page mode.
  const std::string thp = vks::gguf::transparent_huge_pages_mode();
  EXPECT_NE(r.out.find("CPU backend weights: copied into memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(transparent huge pages: " + (thp.empty() ? std::string("unknown") : thp) + ")"),
            std::string::npos)
      << r.out;
  // `devices` asks no daemon: one JSON array on one newline-terminated line (lavapipe or no device).
  r = vks::test::run_process({vkstream_exe(), "devices", "--json"}, {}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_GE(r.out.size(), 3u) << r.out;
  EXPECT_EQ(r.out.front(), '[') << r.out;
  EXPECT_EQ(r.out.substr(r.out.size() - 2), "]\n") << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  // The picked device carries the backend a plain start would use on it (backend_choice.h).
  if (r.out != "[]\n") {
    const size_t picked = r.out.find("\"picked\":true");
    ASSERT_NE(picked, std::string::npos) << r.out;
    const size_t type = r.out.rfind("\"type\":\"", picked);  // the picked device's own "type"
    ASSERT_NE(type, std::string::npos) << r.out;
    const std::string cpu_type = "\"type\":\"cpu\"";
    const bool cpu_device = r.out.compare(type, cpu_type.size(), cpu_type) == 0;
    EXPECT_NE(r.out.find(cpu_device ? "\"default_backend\":\"the CPU backend: "
                                    : "\"default_backend\":\"Vulkan"),
              std::string::npos)
        << r.out;
    // Whether the dot matmul kernels can run there (lavapipe: the extension, not accelerated).
    EXPECT_NE(r.out.find("\"integer_dot\":"), std::string::npos) << r.out;
    if (cpu_device) {
      EXPECT_NE(r.out.find("\"integer_dot_accelerated\":false"), std::string::npos) << r.out;
    }
  }
}

TEST_F(CliE2E, FollowFromAnotherProcessWhileItRuns) {
  const std::string out_file = daemon_->dir() + "/gen.out";
  std::vector<std::string> argv = {vkstream_exe(), "generate"};
  for (const std::string& f : daemon_->cli_flags()) argv.push_back(f);
  for (const char* a : {"--greedy", "-n", "1500", "--ignore-eos", "--id", "cli-follow-live"}) argv.emplace_back(a);
  argv.emplace_back(vks::test::kReferencePrompt);
  vks::test::BackgroundProcess gen(argv, out_file);
  // Retry until the request exists (the generator may not have submitted yet).
  ProcessResult f;
  for (int attempt = 0; attempt < 100; ++attempt) {
    f = cli("follow", {"cli-follow-live"});
    if (f.exit_code == 0 || f.err.find("not_found") == std::string::npos) break;
  }
  EXPECT_EQ(gen.wait(60), 0);
  EXPECT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(f.out, vks::test::read_file(out_file));
  EXPECT_GT(f.out.size(), 1000u);
}

TEST_F(CliE2E, ErrorsAreOneLineWithNonZeroExit) {
  ProcessResult r = cli("cancel", {"no-such-request"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not_found"), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;

  r = cli("generate", {"--temperature", "-1", "hi"});
  EXPECT_EQ(r.exit_code, 2);  // rejected by the command line already
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;

  r = cli("generate", {"--logit-bias", "abc", "hi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("ID=BIAS"), std::string::npos) << r.err;
}

TEST_F(CliE2E, BenchReportsThroughputAndLatency) {
  const std::string json = daemon_->dir() + "/bench.json";
  const std::string csv = daemon_->dir() + "/bench.csv";
  const ProcessResult r = cli("bench", {"-N", "12", "-c", "3", "--concurrency", "6", "--rate", "200",
                                        "--prompt-len", "4:16", "--output-len", "normal:12:4", "--json", json, "--csv", csv});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("requests: 12 ok, 0 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TTFT"), std::string::npos);
  EXPECT_NE(r.out.find("inter-token"), std::string::npos);
  EXPECT_NE(vks::test::read_file(json).find("\"requests_ok\":12"), std::string::npos);
  EXPECT_EQ(count_lines(vks::test::read_file(csv)), 13u);  // header + 12 rows
}

// `vkstream bench --speculative N` against a daemon that speculates (prompt lookup, every draft
// verified): the draft tokens verified and accepted, summed from the requests' finished timings,
// in the summary, the JSON and the CSV; `--speculative 0` turns it off for its requests.
TEST(CliBenchSpeculative, ReportsDraftAndAcceptedTokens) {
  Daemon daemon({"--speculative", "ngram", "--draft-always"});
  auto bench = [&](const std::string& speculative, const std::string& json) {
    std::vector<std::string> argv = {vkstream_exe(), "bench"};
    for (const std::string& f : daemon.cli_flags()) argv.push_back(f);
    for (const std::string a : {"-N", "4", "-c", "1", "--prompt-len", "8", "--output-len", "64", "-q", "--speculative"}) {
      argv.push_back(a);
    }
    argv.push_back(speculative);
    argv.push_back("--json");
    argv.push_back(json);
    return vks::test::run_process(argv, {}, 60);
  };
  auto number_after = [](const std::string& text, const std::string& key) -> long long {
    const size_t at = text.find(key);
    return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + key.size());
  };
  const std::string on_json = daemon.dir() + "/on.json", off_json = daemon.dir() + "/off.json";
  const ProcessResult on = bench("4", on_json);
  ASSERT_EQ(on.exit_code, 0) << on.err;
  const long long drafted = number_after(on.out, "speculative: ");
  EXPECT_GT(drafted, 0) << on.out;
  EXPECT_NE(on.out.find(" accepted ("), std::string::npos) << on.out;
  const std::string doc = vks::test::read_file(on_json);
  EXPECT_EQ(number_after(doc, "\"draft_tokens\":"), drafted) << doc.substr(0, 400);
  const long long accepted = number_after(on.out, "verified, ");
  EXPECT_GE(accepted, 0) << on.out;
  EXPECT_LE(accepted, drafted) << on.out;
  EXPECT_EQ(number_after(doc, "\"accepted_tokens\":"), accepted) << doc.substr(0, 400);
  const ProcessResult off = bench("0", off_json);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("speculative: 0 draft tokens verified, 0 accepted\n"), std::string::npos) << off.out;
}

// `vkstream embed A B A`: one JSON array of three 64-float arrays, in order; the repeated text gives
// the same array; a text longer than the context fails with one line on stderr.
TEST_F(CliE2E, EmbedPrintsOneJsonArrayOfVectors) {
  ProcessResult r = cli("embed", {"Once upon a time", "The cat sat on the mat.", "Once upon a time"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(count_lines(r.out), 1u);
  ASSERT_GE(r.out.size(), 6u);
  EXPECT_EQ(r.out.substr(0, 2), "[[");
  EXPECT_EQ(r.out.substr(r.out.size() - 3), "]]\n");
  std::vector<std::string> vectors;
  std::string body = r.out.substr(2, r.out.size() - 5);
  for (size_t at = 0;;) {
    const size_t next = body.find("],[", at);
    vectors.push_back(body.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + 3;
  }
  ASSERT_EQ(vectors.size(), 3u) << r.out;
  for (const std::string& v : vectors) {
    EXPECT_EQ(std::count(v.begin(), v.end(), ','), 63) << v;  // 64 floats
    double norm = 0;
    std::istringstream in(v);
    for (std::string x; std::getline(in, x, ',');) norm += std::stod(x) * std::stod(x);
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
  EXPECT_EQ(vectors[0], vectors[2]);
  EXPECT_NE(vectors[0], vectors[1]);
  const ProcessResult raw = cli("embed", {"--raw", "--pooling", "last", "Once upon a time"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_NE(raw.out, "[[" + vectors[0] + "]]\n");

  std::string too_long;
  while (too_long.size() < 40 * 1024) too_long += "Once upon a time, there was a little girl. ";
  const ProcessResult bad = cli("embed", {"ok", too_long});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(count_lines(bad.err), 1u) << bad.err;
  EXPECT_NE(bad.err.find("prompt_too_long"), std::string::npos) << bad.err;
}

// Issue 37: `vkstream generate` cancelled a long prefill after --timeout ms of silence. The daemon
// now reports a prompt read in several steps (here 8 tokens a step, a progress event after each);
// each event restarts the CLI's silence timer and --verbose prints it. The stories prefill is too
// quick to outlast the timeout: that part is CliEventWait.ProgressEventsKeepTheWaitGoingWithoutAStatsCheck.
TEST(CliLongPrefill, GenerateShowsThePromptProgressAndCompletes) {
  const Daemon daemon({"--max-batched-tokens", "8", "--progress-interval", "0"});
  std::string prompt;
  for (int i = 0; i < 12; ++i) prompt += "Once upon a time, there was a little girl. ";
  std::vector<std::string> argv = {vkstream_exe(), "generate"};
  for (const std::string& f : daemon.cli_flags()) argv.push_back(f);
  for (const char* a : {"--greedy", "-n", "4", "--verbose", "--timeout", "500"}) argv.emplace_back(a);
  argv.push_back(prompt);
  const ProcessResult r = vks::test::run_process(argv, "", 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::pair<int, int>> seen;  // (done, total) of each "[prompt D/T tokens read]" line
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) {
    int done = 0, total = 0;
    if (std::sscanf(line.c_str(), "[prompt %d/%d tokens read]", &done, &total) == 2) seen.emplace_back(done, total);
  }
  ASSERT_GE(seen.size(), 10u) << r.err;
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i].first, seen[i - 1].first) << r.err;
  EXPECT_EQ(seen.front().first, 8) << r.err;
  EXPECT_EQ(seen.back().first, seen.back().second) << r.err;
  EXPECT_GT(seen.back().second, 80) << r.err;
  EXPECT_FALSE(r.out.empty());
}

TEST(CliNoDaemon, SaysHowToStartTheDaemon) {
  const std::string dir = vks::test::make_temp_dir("vks-nodaemon");
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{vkstream_exe(), "generate", "--socket", dir + "/none.sock", "hi"},
        std::vector<std::string>{vkstream_exe(), "stats", "--zmq", "ipc://" + dir + "/none.zmq"}}) {
    const ProcessResult r = vks::test::run_process(argv, {}, 30);
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("vkstreamd --model"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("systemctl --user start vkstream.socket"), std::string::npos) << r.err;
  }
  ::rmdir(dir.c_str());
}

}  // namespace
