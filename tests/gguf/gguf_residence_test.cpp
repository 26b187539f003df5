// file_residence.h: the memory a CPU backend copies its weights into (2 MiB-aligned, zeroed,
// writable, huge pages requested), and the check that keeps a copy from crowding the machine; and
// GgufFile::release_pages, which gives back the file's pages once copied.
#include <sys/mman.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
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

// Several huge pages and a size no multiple of a page: aligned, every byte zero and writable.
TEST(GgufResidence, HugePageMemoryIsAlignedZeroedAndWritable) {
  const size_t size = (size_t{5} << 20) + 123;
  bool huge_pages = false;
  auto* p = static_cast<uint8_t*>(map_huge_page_memory(size, &huge_pages));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePage, 0u);
  const std::string mode = transparent_huge_pages_mode();
  if (mode == "always" || mode == "madvise") {
    EXPECT_TRUE(huge_pages) << mode;
  }
  size_t nonzero = 0;
  for (size_t i = 0; i < size; ++i) nonzero += p[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  for (size_t i = 0; i < size; ++i) p[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  for (size_t i = 0; i < size; i += 4093) ASSERT_EQ(p[i], static_cast<uint8_t>((i * 2654435761u) >> 13)) << i;
  munmap(p, size);
}

// A size the machine cannot hold is refused with what and how much; a small one is not.
TEST(GgufResidence, MemoryShortfallSaysWhatWouldNotFit) {
  EXPECT_EQ(memory_shortfall(4096), "");
  const std::string why = memory_shortfall(size_t{1} << 60);
  EXPECT_NE(why.find("would not fit beside 512 MiB free"), std::string::npos) << why;
  EXPECT_NE(why.find(std::to_string((size_t{1} << 60) >> 20) + " MiB"), std::string::npos) << why;
}

// This process's resident pages of file mappings (/proc/self/status RssFile), in KiB.
uint64_t resident_file_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    uint64_t kib = 0;
    if (key == "RssFile:" && status >> kib) return kib;
  }
  return 0;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The tensor bytes of a mapped file, read and then released: they stop counting as resident and
// still read the same.
TEST(GgufResidence, ReleasedPagesOfAMappedFileLeaveResidentMemoryAndStillRead) {
  const std::string path = test::model_path("stories260K.gguf");
  const GgufFile f = GgufFile::open(path);
  const std::vector<uint8_t> on_disk = read_file(path);
  ASSERT_EQ(on_disk.size(), f.file_size());
  const uint8_t* data = f.tensor_data(f.tensors().front()).data() - f.tensors().front().offset;
  const size_t n = f.file_size() - f.data_offset();
  ASSERT_GT(n, size_t{512} << 10);
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i += 64) sum += data[i];  // every page resident
  const uint64_t before = resident_file_kib();
  f.release_pages(data, n);
  const uint64_t after = resident_file_kib();
  EXPECT_LT(after + (n >> 10) / 2, before) << "RssFile " << before << " -> " << after << " KiB (" << sum << ")";
  EXPECT_EQ(std::vector<uint8_t>(data, data + n),
            std::vector<uint8_t>(on_disk.begin() + static_cast<std::ptrdiff_t>(f.data_offset()), on_disk.end()));
}

// A parsed buffer is the caller's memory: releasing its range changes nothing.
TEST(GgufResidence, ReleasingAParsedBufferLeavesItsBytes) {
  const std::vector<uint8_t> bytes = read_file(test::model_path("stories260K.gguf"));
  const std::vector<uint8_t> copy = bytes;
  const GgufFile f = GgufFile::parse(bytes);
  f.release_pages(bytes.data(), bytes.size());
  EXPECT_EQ(bytes, copy);
}

}  // namespace
}  // namespace vks::gguf
