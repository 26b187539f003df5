// The loader on Qwen3.5 files whose hybrid parts are damaged (qwen35-tiny.gguf with a tensor or
// key renamed in place): each is refused with kCorrupt naming what is missing, and a file without
// attention.recurrent_layers falls back to full_attention_interval as llama.cpp does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "tests/common/test_models.h"

namespace vks {
namespace {

// qwen35-tiny.gguf with each `from` (once in the file) replaced by `to` (same length), written to a
// temporary file whose path is returned.
std::string patched_fixture(const std::vector<std::pair<std::string, std::string>>& edits) {
  std::ifstream in(test::model_path("qwen35-tiny.gguf"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(bytes.empty()) << "qwen35-tiny.gguf not found under " << test::models_dir();
  for (const auto& [from, to] : edits) {
    EXPECT_EQ(from.size(), to.size());
    const size_t at = bytes.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    EXPECT_EQ(bytes.find(from, at + 1), std::string::npos) << from << " is not unique";
    if (at != std::string::npos) bytes.replace(at, from.size(), to);
  }
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("vks_hybrid_" + std::to_string(::getpid()) + "_" + edits.front().second + ".gguf"))
                               .string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// The error loading a patched fixture (empty when it loads).
std::string load_error(const std::vector<std::pair<std::string, std::string>>& edits, ErrorCode want) {
  const std::string path = patched_fixture(edits);
  std::string message;
  try {
    LlamaModel::load(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), want) << e.what();
    message = e.what();
  }
  std::filesystem::remove(path);
  return message;
}

TEST(HybridLoader, MissingDeltaNetTensorIsNamed) {
  // blk.2.ssm_dt.bias moved to a block that does not exist: layer 2 lacks it.
  const std::string e = load_error({{"blk.2.ssm_dt.bias", "blk.7.ssm_dt.bias"}}, ErrorCode::kCorrupt);
  EXPECT_NE(e.find("tensor 'blk.2.ssm_dt.bias' is missing"), std::string::npos) << e;
  const std::string conv = load_error({{"blk.0.ssm_conv1d.weight", "blk.9.ssm_conv1d.weight"}}, ErrorCode::kCorrupt);
  EXPECT_NE(conv.find("tensor 'blk.0.ssm_conv1d.weight' is missing"), std::string::npos) << conv;
}

TEST(HybridLoader, MissingSsmKeyIsNamed) {
  const std::string e = load_error({{"qwen35.ssm.group_count", "qwen35.ssm.group_counX"}}, ErrorCode::kCorrupt);
  EXPECT_NE(e.find("'qwen35.ssm.group_count' is missing"), std::string::npos) << e;
}

TEST(HybridLoader, RecurrentLayersFallBackToFullAttentionInterval) {
  // Without the array, interval 2 gives the same layers (0 and 2 recurrent).
  const std::string path = patched_fixture({{"qwen35.attention.recurrent_layers", "qwen35.attention.recurrent_layerX"}});
  const auto model = LlamaModel::load(path);
  std::filesystem::remove(path);
  for (uint32_t l = 0; l < 4; ++l) {
    EXPECT_EQ(model->config().layers[l].mixer, l % 2 == 0 ? Mixer::kDeltaNet : Mixer::kAttention) << "layer " << l;
  }
  // Neither key: refused, naming both.
  const std::string e = load_error({{"qwen35.attention.recurrent_layers", "qwen35.attention.recurrent_layerX"},
                                    {"qwen35.full_attention_interval", "qwen35.full_attention_intervaX"}},
                                   ErrorCode::kCorrupt);
  EXPECT_NE(e.find("'qwen35.attention.recurrent_layers' and 'qwen35.full_attention_interval' are both missing"),
            std::string::npos)
      << e;
}

TEST(HybridLoader, InconsistentSsmShapesAreRefused) {
  // ssm.inner_size (a uint32 after its key and type) set to 100, not 4 value heads x 32.
  const std::string key = "qwen35.ssm.inner_size";
  std::string value(4, '\0');
  value[0] = 100;
  std::ifstream in(test::model_path("qwen35-tiny.gguf"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes[at + key.size()], 4) << "ssm.inner_size is not a uint32";
  bytes.replace(at + key.size() + 4, 4, value);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("vks_hybrid_inner_" + std::to_string(::getpid()) + ".gguf")).string();
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    LlamaModel::load(path);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("ssm.inner_size 100 is not ssm.time_step_rank 4 x ssm.state_size 32"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

TEST(HybridLoader, MissingSharedExpertGateIsNamed) {
  std::ifstream in(test::model_path("qwen35moe-tiny.gguf"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  const std::string from = "blk.3.ffn_gate_inp_shexp.weight";
  const size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, from.size(), "blk.8.ffn_gate_inp_shexp.weight");
  const std::string path =
      (std::filesystem::temp_directory_path() / ("vks_hybrid_moe_" + std::to_string(::getpid()) + ".gguf")).string();
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    LlamaModel::load(path);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'blk.3.ffn_gate_inp_shexp.weight' is missing"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace vks
