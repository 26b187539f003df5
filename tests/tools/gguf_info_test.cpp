// vks-gguf-info: lists a GGUF and says whether vkstream can run it; bad files give one clear error.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/common/test_models.h"

namespace vks {
namespace {

struct ToolRun {
  int status = -1;
  std::string output;  // stdout and stderr
};

// Strings are built with append(): GCC 12 reports a false -Wrestrict on "literal" + std::string.
std::string quote(const std::string& s) { return std::string("'").append(s).append("'"); }

ToolRun run_info(const std::string& args) {
  const std::string tool = test::build_dir().append("/tools/vks-gguf-info");
  EXPECT_TRUE(std::filesystem::exists(tool)) << tool;
  ToolRun r;
  const std::string cmd = quote(tool).append(" ").append(args).append(" 2>&1");
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) r.output.append(buf, n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(GgufInfo, RunnableModel) {
  const ToolRun r = run_info(quote(test::model_path("stories260K.gguf")));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("GGUF v3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tokenizer.ggml.seperator_token_id"), std::string::npos);
  EXPECT_NE(r.output.find("tensor blk.4.ffn_down.weight"), std::string::npos);
  EXPECT_NE(r.output.find("[string x 512] \"<unk>\""), std::string::npos);
  EXPECT_NE(r.output.find("runnable llama model: dim 64, layers 5, heads 8 (kv 4, head 8), hidden 172, vocab 512"),
            std::string::npos)
      << r.output;
}

TEST(GgufInfo, NewArchitecturesAndTypes) {
  const ToolRun qwen = run_info(std::string("--no-tensors ").append(quote(test::model_path("qwen2-tiny.gguf"))));
  EXPECT_EQ(qwen.status, 0) << qwen.output;
  EXPECT_NE(qwen.output.find("runnable qwen2 model: dim 128, layers 3"), std::string::npos) << qwen.output;
  EXPECT_NE(qwen.output.find("rope neox base 1e+06"), std::string::npos) << qwen.output;
  EXPECT_NE(qwen.output.find("q/k/v biases"), std::string::npos) << qwen.output;
  const ToolRun llama3 = run_info(std::string("--no-tensors ").append(quote(test::model_path("llama3-rope-freqs-tiny.gguf"))));
  EXPECT_EQ(llama3.status, 0) << llama3.output;
  EXPECT_NE(llama3.output.find("rope_freqs factors"), std::string::npos) << llama3.output;
  const ToolRun kquant = run_info(std::string("--no-tensors ").append(quote(test::model_path("kquant-q4_k_m.gguf"))));
  EXPECT_EQ(kquant.status, 0) << kquant.output;
  EXPECT_NE(kquant.output.find("f32 x 9, q4_K x 25, q6_K x 5"), std::string::npos) << kquant.output;
}

TEST(GgufInfo, VocabularyOnlyFileIsNotRunnable) {
  const ToolRun r = run_info(std::string("--no-tensors ").append(quote(test::model_path("llama2-vocab.gguf"))));
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("not runnable by vkstream"), std::string::npos) << r.output;
}

TEST(GgufInfo, TruncatedFileIsOneClearError) {
  const std::string src = test::model_path("stories260K.gguf");
  const std::string path =
      (std::filesystem::temp_directory_path() / std::string("vks_info_trunc_").append(std::to_string(::getpid())).append(".gguf")).string();
  {
    std::ifstream in(src, std::ios::binary);
    std::vector<char> head(5000);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream out(path, std::ios::binary);
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
  }
  const ToolRun r = run_info(quote(path));
  std::filesystem::remove(path);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("file truncated"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at byte offset"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[corrupt]"), std::string::npos) << r.output;
}

TEST(GgufInfo, MissingFile) {
  const ToolRun r = run_info("/nonexistent/model.gguf");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("/nonexistent/model.gguf"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[not_found]"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace vks
