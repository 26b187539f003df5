// The loader on Gemma 4 "E" files whose KV sharing cannot hold (gemma4-e-tiny.gguf with one value
// patched in place): too many sharing layers, or a sharing layer whose source is of another kind,
// are refused with a message naming the layers; the unpatched file loads with its pairing.
#include <gtest/gtest.h>

#include <cstring>
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

// gemma4-e-tiny.gguf with the bytes at `skip` past the end of `key`'s name replaced by `value`,
// written to a temporary file whose path is returned.
std::string patched(const std::string& key, size_t skip, const std::string& value, const std::string& tag) {
  std::ifstream in(test::model_path("gemma4-e-tiny.gguf"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(bytes.empty()) << "gemma4-e-tiny.gguf not found under " << test::models_dir();
  const size_t at = bytes.find(key);
  EXPECT_NE(at, std::string::npos) << key;
  if (at != std::string::npos) bytes.replace(at + key.size() + skip, value.size(), value);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("vks_gemma4_" + std::to_string(::getpid()) + "_" + tag + ".gguf")).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string le32(uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}

void expect_refused(const std::string& path, ErrorCode code, const std::string& words) {
  try {
    LlamaModel::load(path);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Gemma4Loader, TheFixturePairsItsSharingLayersByKind) {
  const auto m = LlamaModel::load(test::model_path("gemma4-e-tiny.gguf"));
  EXPECT_EQ(m->config().kv_layer(4), 2u);  // window layer: the last earlier window layer with a cache
  EXPECT_EQ(m->config().kv_layer(5), 3u);  // global layer
}

TEST(Gemma4Loader, TooManySharingLayersAreRefused) {
  // The value of attention.shared_kv_layers (a uint32 after its type) from 2 to 5 of 6 layers.
  expect_refused(patched("gemma4.attention.shared_kv_layers", 4, le32(5), "shared"), ErrorCode::kCorrupt,
                 "shared_kv_layers 5 leaves fewer than 2 of 6 layers");
}

TEST(Gemma4Loader, ASharingLayerWhoseSourceIsOfAnotherKindIsRefused) {
  // sliding_window_pattern [t, f, t, f, t, f] (type, element type, count, then one byte a layer):
  // layer 2 made global, so window layer 4 would read a global layer's cache.
  expect_refused(patched("gemma4.attention.sliding_window_pattern", 4 + 4 + 8 + 2, std::string(1, '\0'), "pattern"),
                 ErrorCode::kUnsupported, "layer 4 shares the keys and values of layer 2, whose attention differs");
}

}  // namespace
}  // namespace vks
