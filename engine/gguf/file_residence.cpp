#include "engine/gguf/file_residence.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

namespace vks::gguf {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
// Left free beside a copy, so that moving a model into memory never pushes the machine into
// reclaiming what other processes need.
constexpr uint64_t kMemoryMargin = uint64_t{512} << 20;

size_t page_round(size_t n) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

// A PROT_NONE reservation of `size` bytes at a 2 MiB-aligned address (the slack around it returned).
void* reserve_aligned(size_t size) {
  void* raw = mmap(nullptr, size + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + size + kHugePage;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
  return reinterpret_cast<void*>(aligned);
}

// /proc/meminfo's MemAvailable (page cache the kernel can drop included), or nullopt.
std::optional<uint64_t> available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

std::string transparent_huge_pages_mode() {
  // The file reads e.g. "always [madvise] never": the bracketed word is the mode.
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string word;
  while (in >> word) {
    if (word.size() > 2 && word.front() == '[' && word.back() == ']') return word.substr(1, word.size() - 2);
  }
  return "";
}

void* map_huge_page_memory(size_t size, bool* huge_pages) {
  const size_t span = page_round(size);
  void* memory = reserve_aligned(span);
  if (memory == nullptr) return nullptr;
  if (mprotect(memory, span, PROT_READ | PROT_WRITE) != 0) {
    const int err = errno;
    munmap(memory, span);
    errno = err;
    return nullptr;
  }
  const bool granted = madvise(memory, span, MADV_HUGEPAGE) == 0;
  if (huge_pages != nullptr) *huge_pages = granted;
  return memory;
}

std::string memory_shortfall(size_t size) {
  const std::optional<uint64_t> available = available_memory();
  if (!available || *available >= size + kMemoryMargin) return "";
  return "the model's " + mib(size) + " would not fit beside " + mib(kMemoryMargin) + " free (" + mib(*available) +
         " available)";
}

}  // namespace vks::gguf
