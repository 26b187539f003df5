// stories260K.gguf truncated at many lengths and with thousands of random byte flips: every variant
// either parses or throws vks::Error; nothing crashes (this binary also runs under ASan+UBSan).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>

#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_model.h"
#include "tests/common/test_models.h"

namespace vks::gguf {
namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Parses `bytes`, an exactly-sized heap buffer (so ASan sees any read past the end) and, when it parses,
// validates it as a model too. Returns whether parsing succeeded; any other exception escapes.
bool parse_exact(const std::vector<uint8_t>& bytes) {
  try {
    GgufFile f = GgufFile::parse(bytes);
    try {
      (void)LlamaModel::from_file(std::move(f));
    } catch (const Error&) {
    }
    return true;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at byte offset"), std::string::npos) << "message: " << e.what();
    return false;
  }
}

bool parse_copy(const uint8_t* data, size_t n) { return parse_exact(std::vector<uint8_t>(data, data + n)); }

class Stories : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = read_file(test::model_path("stories260K.gguf"));
    ASSERT_GT(bytes_.size(), 1000000u);
    data_offset_ = GgufFile::parse(bytes_).data_offset();
  }
  std::vector<uint8_t> bytes_;
  uint64_t data_offset_ = 0;
};

TEST_F(Stories, EveryTruncationIsRejected) {
  // Every length through the header area (magic, metadata, tensor infos), then a stride.
  size_t checked = 0;
  for (size_t n = 0; n < bytes_.size(); n += (n < data_offset_ + 64 ? 1 : 4099)) {
    EXPECT_FALSE(parse_copy(bytes_.data(), n)) << "truncated to " << n << " bytes parsed";
    ++checked;
  }
  EXPECT_FALSE(parse_copy(bytes_.data(), bytes_.size() - 1));
  EXPECT_TRUE(parse_copy(bytes_.data(), bytes_.size()));
  EXPECT_GT(checked, data_offset_);
}

TEST_F(Stories, RandomByteFlipsParseOrThrow) {
  std::mt19937_64 rng(20261121);
  std::vector<uint8_t> mutated = bytes_;
  int parsed = 0;
  int rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const int n_flips = 1 + static_cast<int>(rng() % 4);
    std::vector<std::pair<size_t, uint8_t>> undo;
    for (int k = 0; k < n_flips; ++k) {
      // Mostly in the header area, where the parser looks; sometimes anywhere.
      const size_t limit = (rng() % 4 != 0) ? static_cast<size_t>(data_offset_) : mutated.size();
      const size_t at = rng() % limit;
      undo.emplace_back(at, mutated[at]);
      mutated[at] ^= static_cast<uint8_t>(1 + rng() % 255);
    }
    (parse_exact(mutated) ? parsed : rejected)++;
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) mutated[it->first] = it->second;
  }
  // Both outcomes must occur: flips in string bytes or float values are harmless, flips in lengths are not.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(rejected, 100);
}

TEST_F(Stories, FlipsInsideTensorDataAlwaysParse) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> mutated = bytes_;
  for (int k = 0; k < 1000; ++k) {
    const size_t at = data_offset_ + rng() % (mutated.size() - data_offset_);
    mutated[at] = static_cast<uint8_t>(rng());
  }
  EXPECT_TRUE(parse_exact(mutated));
}

}  // namespace
}  // namespace vks::gguf
