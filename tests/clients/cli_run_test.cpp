// `vkstream run`: the in-process first generation (no daemon) and its load-time errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/clients/process_util.h"
#include "tests/clients/reference.h"
#include "tests/common/test_models.h"

namespace {

using vks::test::ProcessResult;

std::string vkstream_exe() { return vks::test::build_dir() + "/clients/cli/vkstream"; }

size_t count_lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(CliRun, GreedyOnStories260KPrintsTheReferenceText) {
  const vks::test::GreedyReference ref = vks::test::load_greedy_reference();
  const ProcessResult r = vks::test::run_process({vkstream_exe(), "run", "--model", vks::test::model_path("stories260K.gguf"),
                                                  "--cpu", "--greedy", "--max-tokens", "60", vks::test::kReferencePrompt});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ref.text);
}

TEST(CliRun, SeededSamplingIsReproducible) {
  const std::vector<std::string> argv = {vkstream_exe(), "run", "--model", vks::test::model_path("stories260K.gguf"),
                                         "--cpu", "--temperature", "0.9", "--top-k", "40", "--top-p", "0.95",
                                         "--seed", "1234", "-n", "40", "--no-echo", "Once upon a time"};
  const ProcessResult a = vks::test::run_process(argv);
  const ProcessResult b = vks::test::run_process(argv);
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_GT(a.out.size(), 20u);
}

TEST(CliRun, LogprobsTableShowsEachTokensOwnBytesWithItsLeadingSpace) {
  // Greedy stories260K continues with whole words ("▁was", "▁a"...): their rows must keep the
  // space, which decoding a piece alone would strip (the SentencePiece rule for a first piece).
  const ProcessResult r = vks::test::run_process({vkstream_exe(), "run", "--model", vks::test::model_path("stories260K.gguf"),
                                                  "--cpu", "--greedy", "-n", "8", "--logprobs", "1", "--no-echo",
                                                  "Once upon a time"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t table = r.out.find("logprobs (");
  ASSERT_NE(table, std::string::npos) << r.out;
  std::istringstream rows(r.out.substr(table));
  std::string row;
  size_t spaced = 0, total = 0;
  std::getline(rows, row);  // the header
  while (std::getline(rows, row)) {
    if (row.rfind("  \"", 0) != 0) continue;
    ++total;
    if (row.rfind("  \" ", 0) == 0) ++spaced;
  }
  EXPECT_EQ(total, 8u) << r.out;
  EXPECT_GT(spaced, 0u) << r.out;
}

TEST(CliRun, WithoutMaxTokensASmallContextModelGeneratesUntilTheContextIsFull) {
  // aidreams260K has a context of 128: no max_tokens means "until the context is full".
  const ProcessResult r = vks::test::run_process({vkstream_exe(), "run", "-m", vks::test::model_path("aidreams260K.gguf"),
                                                  "--cpu", "--ignore-eos", "-v", "Once upon a time"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[length: prompt 13, generated 115"), std::string::npos) << r.err;
  const ProcessResult too_many = vks::test::run_process({vkstream_exe(), "run", "-m", vks::test::model_path("aidreams260K.gguf"),
                                                         "--cpu", "-n", "200", "Once upon a time"});
  EXPECT_EQ(too_many.exit_code, 1);
  EXPECT_NE(too_many.err.find("by 72"), std::string::npos) << too_many.err;
  const ProcessResult with_prompt = vks::test::run_process({vkstream_exe(), "run", "-m", vks::test::model_path("aidreams260K.gguf"),
                                                         "--cpu", "-n", "120", "Once upon a time"});
  EXPECT_EQ(with_prompt.exit_code, 1);
  EXPECT_NE(with_prompt.err.find("by 5 (at most 115 fit"), std::string::npos) << with_prompt.err;
}

// Issue 15: `run --json` prints the event objects `generate --json` prints, and -v a load summary.
TEST(CliRun, JsonPrintsTheAcceptedAnswerAndEveryEvent) {
  const vks::test::GreedyReference ref = vks::test::load_greedy_reference();
  const ProcessResult r = vks::test::run_process({vkstream_exe(), "run", "-m", vks::test::model_path("stories260K.gguf"),
                                                  "--cpu", "--greedy", "-n", "12", "--json", "--logprobs", "2", "-v",
                                                  vks::test::kReferencePrompt});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
    ASSERT_FALSE(lines.back().is_discarded()) << line;
  }
  ASSERT_GE(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines.front()["type"], "accepted");
  const std::string id = lines.front()["id"];
  EXPECT_EQ(lines.back()["type"], "finished");
  EXPECT_EQ(lines.back()["reason"], "length");
  EXPECT_EQ(lines.back()["usage"]["generated_tokens"], 12);
  std::string text;
  int64_t expected_seq = 0;
  size_t tokens = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["id"], id);
    EXPECT_EQ(lines[i]["seq"], expected_seq++);
    if (lines[i]["type"] != "token") continue;
    text += lines[i]["text"].get<std::string>();
    tokens += lines[i]["ids"].size();
    ASSERT_EQ(lines[i]["logprobs"].size(), lines[i]["ids"].size());
    EXPECT_EQ(lines[i]["logprobs"][0]["top"].size(), 2u);
  }
  EXPECT_EQ(tokens, 12u);
  // The greedy reference continues the prompt: the streamed text is its next part.
  EXPECT_EQ(ref.text.find(std::string(vks::test::kReferencePrompt) + text), 0u) << text;
  EXPECT_NE(r.err.find("[stories260K.gguf: llama, 5 layers"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; device cpu; loaded in "), std::string::npos) << r.err;
}

TEST(CliRun, MissingFileSaysWhatToDo) {
  const ProcessResult r = vks::test::run_process({vkstream_exe(), "run", "--model", "/nonexistent/model.gguf", "hi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
}

TEST(CliRun, CorruptFileIsOneClearLine) {
  const std::string dir = vks::test::make_temp_dir("vks-run");
  const std::string bad = dir + "/bad.gguf";
  {
    std::ofstream f(bad, std::ios::binary);
    const std::string bytes("GGUF\x03\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\x7f not a model", 29);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const std::string good = vks::test::read_file(vks::test::model_path("stories260K.gguf"));
  const std::string truncated = dir + "/truncated.gguf";
  {
    std::ofstream f(truncated, std::ios::binary);
    f.write(good.data(), static_cast<std::streamsize>(good.size() / 2));
  }
  for (const std::string& path : {bad, truncated}) {
    const ProcessResult r = vks::test::run_process({vkstream_exe(), "run", "--model", path, "--cpu", "hi"});
    EXPECT_EQ(r.exit_code, 1) << path;
    EXPECT_EQ(r.out, "") << path;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("vkstream: run:"), std::string::npos) << r.err;
  }
  std::remove(bad.c_str());
  std::remove(truncated.c_str());
  ::rmdir(dir.c_str());
}

TEST(CliRun, UnsupportedArchitectureIsOneClearLine) {
  // stories260K with general.architecture = "mamba" instead of "llama" (same length, so every
  // offset stays valid).
  std::string bytes = vks::test::read_file(vks::test::model_path("stories260K.gguf"));
  const std::string key = "general.architecture";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  const size_t value = at + key.size() + 4 + 8;  // u32 type (string), u64 length
  ASSERT_EQ(bytes.substr(value, 5), "llama");
  bytes.replace(value, 5, "mamba");
  const std::string dir = vks::test::make_temp_dir("vks-run");
  const std::string path = dir + "/mamba.gguf";
  {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const ProcessResult r = vks::test::run_process({vkstream_exe(), "run", "--model", path, "--cpu", "hi"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("mamba"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unsupported"), std::string::npos) << r.err;
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
