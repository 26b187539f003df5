// Cross-implementation check: vks-make-model files, their tokenization and greedy generation
// compared with llama.cpp. The expected ids were computed once with llama.cpp (node-llama-cpp 3.22.1,
// CPU) on the files `vks-make-model -o tiny_f32.gguf` (preset tiny, f32, seed 1) and
// `vks-make-model -o qwen3_f32.gguf --arch qwen3` (the same with per-head Q/K RMSNorm, NEOX rope and
// qwen3 keys: no qwen3 reference exists in ../shared/models), whose exact bytes are pinned below: if
// the generator changes, the hash test fails and the ids must be recomputed (see tools/README.md,
// "Checking against llama.cpp").
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "engine/cpu/cpu_model.h"
#include "engine/model/llama_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/common/test_models.h"

namespace vks {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kTinyF32Fnv1a = 0xa1f9c8593f9eb171ull;
constexpr uint64_t kTinyF32Bytes = 669088;
constexpr uint64_t kQwen3F32Fnv1a = 0x51a376aac7e70271ull;
constexpr uint64_t kQwen3F32Bytes = 669568;

uint64_t fnv1a(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(1 << 16);
  uint64_t h = 0xcbf29ce484222325ull;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    for (std::streamsize k = 0; k < in.gcount(); ++k) {
      h ^= static_cast<uint8_t>(buf[static_cast<size_t>(k)]);
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

class LlamaCppCrossCheck : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("vks_llama_cpp_check_" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    path_ = new std::string((*dir_ / "tiny_f32.gguf").string());
    qwen3_path_ = new std::string((*dir_ / "qwen3_f32.gguf").string());
    const std::string tool = test::build_dir() + "/tools/vks-make-model";
    const std::string cmd = "'" + tool + "' -q -o '" + *path_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const std::string qwen3_cmd = "'" + tool + "' -q --arch qwen3 -o '" + *qwen3_path_ + "'";
    ASSERT_EQ(std::system(qwen3_cmd.c_str()), 0) << qwen3_cmd;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete path_;
    delete qwen3_path_;
  }
  static fs::path* dir_;
  static std::string* path_;
  static std::string* qwen3_path_;
};
fs::path* LlamaCppCrossCheck::dir_ = nullptr;
std::string* LlamaCppCrossCheck::path_ = nullptr;
std::string* LlamaCppCrossCheck::qwen3_path_ = nullptr;

// Greedy ids of the CPU reference (plain argmax, EOS not special) after `prompt`.
std::vector<int32_t> cpu_greedy(const std::string& path, const std::vector<int32_t>& prompt, size_t n) {
  const auto model = LlamaModel::load(path);
  CpuModel cpu(*model, 2, 128);
  std::vector<int32_t> generated;
  int32_t pos = 0;
  const std::vector<float>* logits = nullptr;
  for (int32_t t : prompt) logits = &cpu.forward(t, pos++);
  while (generated.size() < n) {
    int32_t best = 0;
    for (int32_t k = 1; k < static_cast<int32_t>(logits->size()); ++k) {
      if ((*logits)[k] > (*logits)[best]) best = k;
    }
    generated.push_back(best);
    logits = &cpu.forward(best, pos++);
  }
  return generated;
}

TEST_F(LlamaCppCrossCheck, GeneratorOutputIsPinned) {
  EXPECT_EQ(fs::file_size(*path_), kTinyF32Bytes);
  EXPECT_EQ(fnv1a(*path_), kTinyF32Fnv1a) << "vks-make-model output changed: recompute the llama.cpp ids below";
  EXPECT_EQ(fs::file_size(*qwen3_path_), kQwen3F32Bytes);
  EXPECT_EQ(fnv1a(*qwen3_path_), kQwen3F32Fnv1a) << "vks-make-model --arch qwen3 output changed: recompute the ids";
}

TEST_F(LlamaCppCrossCheck, TokenizerMatchesLlamaCpp) {
  const auto file = gguf::GgufFile::open(*path_);
  const auto tok = Tokenizer::from_gguf(file);
  const std::vector<std::pair<std::string, std::vector<TokenId>>> cases = {
      {"Once upon a time", {259, 300, 273, 432, 365, 275, 274, 273, 356, 355, 268, 272, 264}},
      {"Hello world", {259, 293, 494, 271, 274, 369, 274, 277, 271, 263}},
      {" leading space", {259, 364, 264, 389, 268, 273, 266, 360, 275, 392, 264}},
      {"na\xC3\xAFve caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC", {359, 260, 198, 178, 281, 264, 366, 394, 198, 172, 259, 233, 154, 168, 233, 159, 175}},
      {"the theater then", {355, 267, 264, 355, 267, 264, 381, 492, 355, 267, 489}},
      {"x\ny\tz 123", {378, 13, 284, 12, 285, 259, 313, 314, 315}},
  };
  for (const auto& [text, ids] : cases) EXPECT_EQ(tok->encode(text, /*add_bos=*/false), ids) << text;
}

TEST_F(LlamaCppCrossCheck, CpuReferenceGreedyMatchesLlamaCpp) {
  const std::vector<int32_t> prompt = {1, 259, 300, 273, 432, 365, 275, 274, 273, 356, 355, 268, 272, 264};
  const std::vector<int32_t> llama_cpp_greedy = {402, 77, 269, 159, 86, 135, 124, 166, 452, 452, 383, 439,
                                                 223, 38, 298, 347, 480, 231, 50, 186, 10, 135, 124, 64};
  EXPECT_EQ(cpu_greedy(*path_, prompt, llama_cpp_greedy.size()), llama_cpp_greedy);
}

TEST_F(LlamaCppCrossCheck, Qwen3CpuReferenceGreedyMatchesLlamaCpp) {
  // llama.cpp's prompt for this file is the same BOS + "Once upon a time" (same vocabulary).
  const std::vector<int32_t> prompt = {1, 259, 300, 273, 432, 365, 275, 274, 273, 356, 355, 268, 272, 264};
  const std::vector<int32_t> llama_cpp_greedy = {452, 469, 84,  173, 326, 14,  373, 504, 161, 501, 489, 147,
                                                 120, 204, 509, 290, 452, 177, 272, 400, 285, 31,  231, 147};
  EXPECT_EQ(cpu_greedy(*qwen3_path_, prompt, llama_cpp_greedy.size()), llama_cpp_greedy);
}

}  // namespace
}  // namespace vks
