// Each kind of malformed file is rejected with the right code, a message naming the problem, and
// the byte offset where it was found.
#include <gtest/gtest.h>

#include "engine/gguf/gguf_file.h"
#include "tests/gguf/raw_gguf.h"

namespace vks::gguf {
namespace {

using test::RawGguf;

struct Expected {
  ErrorCode code;
  std::string words;   // must appear in the message
  int64_t offset;      // -1: do not check
};

void expect_error(const std::vector<uint8_t>& bytes, const Expected& e) {
  try {
    GgufFile::parse(bytes);
    FAIL() << "parsed without error; expected: " << e.words;
  } catch (const Error& err) {
    const std::string msg = err.what();
    EXPECT_EQ(err.code(), e.code) << msg;
    EXPECT_NE(msg.find(e.words), std::string::npos) << msg;
    if (e.offset >= 0) {
      EXPECT_NE(msg.find("at byte offset " + std::to_string(e.offset) + ")"), std::string::npos) << msg;
    }
  }
}

TEST(GgufCorrupt, TooSmallAndBadMagic) {
  expect_error({}, {ErrorCode::kCorrupt, "too small", 0});
  expect_error({'G', 'G'}, {ErrorCode::kCorrupt, "too small", 0});
  expect_error({'G', 'G', 'U', 'X', 3, 0, 0, 0}, {ErrorCode::kCorrupt, "bad magic", 0});
}

TEST(GgufCorrupt, Versions) {
  expect_error(RawGguf().header(1, 0, 0).bytes, {ErrorCode::kUnsupported, "version 1 is not supported", 4});
  expect_error(RawGguf().header(4, 0, 0).bytes, {ErrorCode::kUnsupported, "unknown GGUF version 4", 4});
  expect_error(RawGguf().header(0x03000000, 0, 0).bytes, {ErrorCode::kUnsupported, "big-endian", 4});
  EXPECT_EQ(GgufFile::parse(RawGguf().header(2, 0, 0).bytes).version(), 2u);
}

TEST(GgufCorrupt, TruncatedHeader) {
  std::vector<uint8_t> b = RawGguf().header(3, 0, 0).bytes;
  b.resize(20);
  expect_error(b, {ErrorCode::kCorrupt, "file truncated: metadata key count", 16});
}

TEST(GgufCorrupt, CountsLargerThanTheFile) {
  expect_error(RawGguf().header(3, 1ull << 60, 0).bytes, {ErrorCode::kCorrupt, "tensor count", 8});
  expect_error(RawGguf().header(3, 0, 5).bytes, {ErrorCode::kCorrupt, "metadata key count 5 cannot fit", 16});
}

TEST(GgufCorrupt, StringLengths) {
  expect_error(RawGguf().header(3, 0, 1).u64(1ull << 62).zeros(8).bytes,
               {ErrorCode::kCorrupt, "exceeds the limit", 24});
  expect_error(RawGguf().header(3, 0, 1).u64(100).zeros(8).bytes,
               {ErrorCode::kCorrupt, "file truncated: metadata key #0 needs 100 bytes", 32});
}

TEST(GgufCorrupt, UnknownValueType) {
  expect_error(RawGguf().header(3, 0, 1).str("k").u32(13).u32(0).bytes,
               {ErrorCode::kCorrupt, "unknown value type of 'k' 13", 33});
  expect_error(RawGguf().header(3, 0, 1).str("k").u32(9).u32(77).u64(0).bytes,
               {ErrorCode::kCorrupt, "unknown array element type of 'k' 77", 37});
}

TEST(GgufCorrupt, DuplicateKey) {
  expect_error(RawGguf().header(3, 0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2).bytes,
               {ErrorCode::kCorrupt, "duplicate metadata key 'a.b'", 43});
}

TEST(GgufCorrupt, ArrayCountBeyondFile) {
  expect_error(RawGguf().header(3, 0, 1).str("arr").u32(9).u32(4).u64(1000).u32(1).bytes,
               {ErrorCode::kCorrupt, "element count of 'arr' 1000 cannot fit", 43});
  // Strings take at least 8 bytes each.
  expect_error(RawGguf().header(3, 0, 1).str("arr").u32(9).u32(8).u64(3).zeros(16).bytes,
               {ErrorCode::kCorrupt, "element count of 'arr' 3 cannot fit", 43});
}

TEST(GgufCorrupt, ArrayNestingLimit) {
  RawGguf r;
  r.header(3, 0, 1).str("deep").u32(9);
  for (int k = 0; k < 20; ++k) r.u32(9).u64(1);
  r.u32(0).u64(0);
  expect_error(r.bytes, {ErrorCode::kCorrupt, "nest deeper than 8", -1});
}

TEST(GgufCorrupt, BadAlignmentValue) {
  expect_error(RawGguf().header(3, 0, 1).kv_u32("general.alignment", 48).bytes,
               {ErrorCode::kCorrupt, "general.alignment 48 is not a power of two", 24});
  expect_error(RawGguf().header(3, 0, 1).kv_u32("general.alignment", 0).bytes,
               {ErrorCode::kCorrupt, "general.alignment 0", 24});
  expect_error(RawGguf().header(3, 0, 1).str("general.alignment").u32(8).str("32").bytes,
               {ErrorCode::kCorrupt, "general.alignment must be an unsigned integer", 24});
}

// One tensor info after an empty metadata section starts at byte 24.
std::vector<uint8_t> one_tensor(std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t data_bytes) {
  return RawGguf().header(3, 1, 0).tensor("w", std::move(dims), type, offset).pad_to(32).zeros(data_bytes).bytes;
}

TEST(GgufCorrupt, TensorDims) {
  expect_error(one_tensor({1, 1, 1, 1, 1}, 0, 0, 64), {ErrorCode::kCorrupt, "has 5 dimensions", 33});
  expect_error(RawGguf().header(3, 1, 0).str("w").u32(0).u32(0).u64(0).zeros(64).bytes,
               {ErrorCode::kCorrupt, "has 0 dimensions", 33});
  expect_error(one_tensor({4, 0}, 0, 0, 64), {ErrorCode::kCorrupt, "invalid dimension 0", 45});
  expect_error(one_tensor({1ull << 40, 1ull << 40}, 0, 0, 64), {ErrorCode::kCorrupt, "overflows", 45});
  expect_error(one_tensor({~0ull}, 0, 0, 64), {ErrorCode::kCorrupt, "invalid dimension", 37});
}

TEST(GgufCorrupt, TensorTypes) {
  expect_error(one_tensor({32}, 5, 0, 64), {ErrorCode::kUnsupported, "unknown ggml type id 5", 45});
  expect_error(one_tensor({32}, 1000, 0, 64), {ErrorCode::kUnsupported, "unknown ggml type id 1000", 45});
  expect_error(one_tensor({33}, 8, 0, 64), {ErrorCode::kCorrupt, "not a multiple of the q8_0 block size 32", 45});
  // MXFP4 (type 39): rows of whole 32-weight blocks of 17 bytes, sized from the table.
  expect_error(one_tensor({48}, 39, 0, 64), {ErrorCode::kCorrupt, "not a multiple of the mxfp4 block size 32", 45});
  expect_error(one_tensor({64, 2}, 39, 0, 64), {ErrorCode::kCorrupt, "extends past the end of the file", 24});
  EXPECT_NO_THROW(GgufFile::parse(one_tensor({64, 2}, 39, 0, 68)));
}

TEST(GgufCorrupt, TensorOffsets) {
  expect_error(one_tensor({4}, 0, 8, 64), {ErrorCode::kCorrupt, "is not a multiple of the alignment 32", 49});
  expect_error(one_tensor({4}, 0, 0, 15), {ErrorCode::kCorrupt, "extends past the end of the file", 24});
  expect_error(one_tensor({4}, 0, 1ull << 63, 64), {ErrorCode::kCorrupt, "extends past the end", 24});
  expect_error(RawGguf().header(3, 1, 0).tensor("w", {4}, 0, 0).bytes,  // no data section at all
               {ErrorCode::kCorrupt, "file truncated: the tensor data section starts past the end", 57});
  EXPECT_NO_THROW(GgufFile::parse(one_tensor({4}, 0, 0, 16)));
}

TEST(GgufCorrupt, DuplicateAndOverlappingTensors) {
  expect_error(RawGguf().header(3, 2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).pad_to(32).zeros(64).bytes,
               {ErrorCode::kCorrupt, "duplicate tensor name 'w'", 57});
  expect_error(RawGguf().header(3, 2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad_to(32).zeros(128).bytes,
               {ErrorCode::kCorrupt, "tensor 'b' data overlaps tensor 'a'", 57});
}

TEST(GgufCorrupt, TensorNameLength) {
  expect_error(RawGguf().header(3, 1, 0).tensor(std::string(64, 'n'), {4}, 0, 0).pad_to(32).zeros(16).bytes,
               {ErrorCode::kCorrupt, "longer than ggml's 63-byte limit", 24});
}

TEST(GgufCorrupt, TensorDataAccessorRejectsForeignInfo) {
  const std::vector<uint8_t> bytes = one_tensor({4}, 0, 0, 16);
  const GgufFile f = GgufFile::parse(bytes);
  TensorInfo fake = f.tensors()[0];
  fake.offset = 1ull << 40;
  EXPECT_THROW(f.tensor_data(fake), Error);
}

}  // namespace
}  // namespace vks::gguf
