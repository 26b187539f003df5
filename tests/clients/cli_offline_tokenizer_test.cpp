// `vkstream tokenize|detokenize --model FILE.gguf`: in-process, no daemon, on model files and on
// vocabulary-only files, printing what the daemon variants print.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/clients/process_util.h"
#include "tests/common/test_models.h"

namespace {

using vks::test::ProcessResult;

std::string vkstream_exe() { return vks::test::build_dir() + "/clients/cli/vkstream"; }

ProcessResult cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {vkstream_exe()};
  for (const std::string& a : args) argv.push_back(a);
  // No daemon is running at this socket: any attempt to reach one would fail the command.
  argv.push_back("--socket");
  argv.push_back("/nonexistent/vkstream.sock");
  return vks::test::run_process(argv, {}, 60);
}

TEST(CliOfflineTokenizer, TokenizesAModelFileLikeTheDaemon) {
  // The daemon variant prints "1 403 407 261 378\n" for this prompt (CliE2E.TokenizeStatusFollowAndStats).
  const ProcessResult r = cli({"tokenize", "--model", vks::test::model_path("stories260K.gguf"), "Once upon a time"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
}

TEST(CliOfflineTokenizer, BpeVocabularyOnlyFiles) {
  // llama.cpp's ids (reference/*-bpe-tokenizer-cases): " this is 🦙.cpp".
  ProcessResult r = cli({"tokenize", "--model", vks::test::model_path("llama3-vocab.gguf"), "--no-bos",
                         " this is \xF0\x9F\xA6\x99.cpp"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "420 374 11410 99 247 13 11055\n");

  r = cli({"tokenize", "--model", vks::test::model_path("llama3-vocab.gguf"), "Hello world"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "128000 9906 1917\n");  // BOS first, as the daemon adds it by default

  r = cli({"tokenize", "--model", vks::test::model_path("qwen2-vocab.gguf"), "--no-bos", "--json", "Hello world"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[9707,1879]\n");

  r = cli({"tokenize", "--model", vks::test::model_path("qwen2-vocab.gguf"), "--no-bos", "--parse-special",
           "<|im_start|>user"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("151644 ", 0), 0u) << r.out;

  r = cli({"detokenize", "--model", vks::test::model_path("qwen2-vocab.gguf"), "419", "374", "11162", "99", "247", "13",
           "10821"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, " this is \xF0\x9F\xA6\x99.cpp\n");

  r = cli({"detokenize", "--model", vks::test::model_path("llama3-vocab.gguf"), "128000", "9906", "1917"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world\n");
}

TEST(CliOfflineTokenizer, ErrorsAreOneClearLine) {
  ProcessResult r = cli({"detokenize", "--model", vks::test::model_path("llama3-vocab.gguf"), "5", "128256"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("128256 is outside the vocabulary (0..128255)"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  r = cli({"tokenize", "--model", "/nonexistent/model.gguf", "hi"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
