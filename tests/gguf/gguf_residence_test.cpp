// file_residence.h: the memory a CPU backend copies its weights into (2 MiB-aligned, zeroed,
// writable, huge pages requested), and the check that keeps a copy from crowding the machine.
#include <sys/mman.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "engine/gguf/file_residence.h"

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

}  // namespace
}  // namespace vks::gguf
