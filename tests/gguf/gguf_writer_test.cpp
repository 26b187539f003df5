// GgufFileSink streams the same bytes as GgufWriter::to_bytes, however the data is chunked, and
// refuses too much or too little tensor data.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace vks::gguf {
namespace {

namespace fs = std::filesystem;

class SinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("vks_sink_test_" + std::to_string(::getpid()) + ".gguf")).string();
    w_.set_alignment(64);
    w_.set("general.architecture", make_string("test"));
    w_.add_tensor("a", GgmlType::kF32, {5});
    w_.add_tensor("b", GgmlType::kQ4_0, {64, 3});
    w_.add_tensor("c", GgmlType::kF16, {7});
    for (const TensorInfo& t : w_.tensors()) {
      std::vector<uint8_t> d(t.nbytes);
      for (size_t k = 0; k < d.size(); ++k) d[k] = static_cast<uint8_t>(k * 13 + t.name[0]);
      data_.push_back(d);
    }
  }
  void TearDown() override { fs::remove(path_); }

  std::vector<uint8_t> read_back() const {
    std::ifstream in(path_, std::ios::binary | std::ios::ate);
    std::vector<uint8_t> out(static_cast<size_t>(in.tellg()));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
    return out;
  }

  std::string path_;
  GgufWriter w_;
  std::vector<std::vector<uint8_t>> data_;
};

TEST_F(SinkTest, ChunkedWritesEqualToBytes) {
  const std::vector<uint8_t> expected = w_.to_bytes(data_);
  EXPECT_EQ(expected.size(), w_.file_size());
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{17}, size_t{1000}}) {
    // All tensor data as one stream, cut into chunks that straddle tensor boundaries.
    std::vector<uint8_t> all;
    for (const auto& d : data_) all.insert(all.end(), d.begin(), d.end());
    {
      GgufFileSink sink(w_, path_);
      for (size_t at = 0; at < all.size(); at += chunk) {
        sink.write(std::span<const uint8_t>(all).subspan(at, std::min(chunk, all.size() - at)));
      }
      EXPECT_EQ(sink.current_tensor(), 3u);
      sink.finish();
    }
    EXPECT_EQ(read_back(), expected) << "chunk " << chunk;
  }
  const GgufFile f = GgufFile::open(path_);
  EXPECT_EQ(f.alignment(), 64u);
  const auto b = f.tensor_data(*f.find_tensor("b"));
  EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.end()), data_[1]);
}

TEST_F(SinkTest, TooMuchOrTooLittleData) {
  {
    GgufFileSink sink(w_, path_);
    for (const auto& d : data_) sink.write(d);
    const uint8_t extra = 0;
    EXPECT_THROW(sink.write({&extra, 1}), Error);
  }
  {
    GgufFileSink sink(w_, path_);
    sink.write(data_[0]);
    EXPECT_EQ(sink.current_tensor(), 1u);
    EXPECT_THROW(sink.finish(), Error);
  }
  EXPECT_THROW(write_gguf_file(w_, {data_[0]}, path_), Error);
}

TEST(GgufSinkErrors, UnwritablePath) {
  GgufWriter w;
  try {
    GgufFileSink sink(w, "/nonexistent-dir/x.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.gguf"), std::string::npos);
  }
}

}  // namespace
}  // namespace vks::gguf
