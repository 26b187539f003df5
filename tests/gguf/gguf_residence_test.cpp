// GgufFile::hold_in_memory (file_residence.h): a mapped file's bytes move into anonymous memory at the
// same addresses, byte for byte, and the file mapping is gone; a parsed buffer stays where it is.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/gguf/file_residence.h"
#include "engine/gguf/gguf_file.h"
#include "tests/common/test_models.h"

namespace vks::gguf {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

// The /proc/self/maps line of the mapping holding addr ("" if none).
std::string maps_line(const void* addr) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) return line;
  }
  return "";
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(GgufResidence, HoldInMemoryKeepsEveryAddressAndByte) {
  const std::string path = test::model_path("stories260K.gguf");
  const GgufFile f = GgufFile::open(path);
  const std::vector<uint8_t> on_disk = read_file(path);
  ASSERT_EQ(on_disk.size(), f.file_size());
  const TensorInfo& first = f.tensors().front();
  const uint8_t* base = f.tensor_data(first).data() - f.data_offset() - first.offset;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % kHugePage, 0u) << "mapped at a 2 MiB boundary";
  EXPECT_NE(maps_line(base).find("stories260K.gguf"), std::string::npos) << maps_line(base);
  std::vector<const uint8_t*> before;
  for (const TensorInfo& t : f.tensors()) before.push_back(f.tensor_data(t).data());

  const MemoryMove moved = f.hold_in_memory();
  ASSERT_TRUE(moved.moved) << moved.why_not;
  EXPECT_TRUE(moved.why_not.empty());
  const std::string line = maps_line(base);
  EXPECT_EQ(line.find("stories260K.gguf"), std::string::npos) << "still the file: " << line;
  EXPECT_FALSE(line.empty());
  for (size_t i = 0; i < f.tensors().size(); ++i) EXPECT_EQ(f.tensor_data(f.tensors()[i]).data(), before[i]);
  EXPECT_EQ(std::vector<uint8_t>(base, base + f.file_size()), on_disk);
  EXPECT_EQ(f.get_int("llama.block_count"), 5);  // the parsed metadata still reads

  const MemoryMove again = f.hold_in_memory();
  EXPECT_TRUE(again.moved);
  EXPECT_EQ(again.huge_pages, moved.huge_pages);
  EXPECT_EQ(maps_line(base), line);
}

TEST(GgufResidence, AParsedBufferStaysWhereItIs) {
  const std::vector<uint8_t> bytes = read_file(test::model_path("stories260K.gguf"));
  const GgufFile f = GgufFile::parse(bytes);
  const uint8_t* data = f.tensor_data(f.tensors().front()).data();
  const MemoryMove m = f.hold_in_memory();
  EXPECT_FALSE(m.moved);
  EXPECT_FALSE(m.huge_pages);
  EXPECT_FALSE(m.why_not.empty());
  EXPECT_EQ(f.tensor_data(f.tensors().front()).data(), data);
}

// A file over several huge pages whose size is no multiple of a page: every byte arrives, the last
// page's tail included.
TEST(GgufResidence, AMappingOfSeveralHugePagesMovesWhole) {
  char name[] = "/tmp/vks_residence_XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> pattern((size_t{5} << 20) + 123);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  ASSERT_EQ(write(fd, pattern.data(), pattern.size()), static_cast<ssize_t>(pattern.size()));
  void* addr = map_file_aligned(fd, pattern.size());
  close(fd);
  unlink(name);
  ASSERT_NE(addr, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(addr) % kHugePage, 0u);
  const MemoryMove m = move_mapping_into_memory(addr, pattern.size());
  ASSERT_TRUE(m.moved) << m.why_not;
  EXPECT_EQ(maps_line(addr).find("vks_residence"), std::string::npos) << maps_line(addr);
  const auto* p = static_cast<const uint8_t*>(addr);
  EXPECT_EQ(std::vector<uint8_t>(p, p + pattern.size()), pattern);
  munmap(addr, pattern.size());
}

}  // namespace
}  // namespace vks::gguf
