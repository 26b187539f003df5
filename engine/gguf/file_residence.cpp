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

void* map_file_aligned(int fd, size_t size) {
  const size_t span = page_round(size);
  void* at = reserve_aligned(span);
  if (at == nullptr) return nullptr;
  void* addr = mmap(at, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (addr == MAP_FAILED) {
    const int err = errno;
    munmap(at, span);
    errno = err;
    return nullptr;
  }
  return addr;
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

MemoryMove move_mapping_into_memory(void* addr, size_t size) {
  MemoryMove result;
  const size_t span = page_round(size);
  const std::optional<uint64_t> available = available_memory();
  if (available && *available < span + kMemoryMargin) {
    result.why_not = "the model's " + mib(span) + " would not fit beside " + mib(kMemoryMargin) + " free (" +
                     mib(*available) + " available)";
    return result;
  }
  // At the same offset within a huge page as addr (0 for map_file_aligned's), so that the huge pages
  // survive the move.
  void* copy = map_huge_page_memory(span, &result.huge_pages);
  if (copy == nullptr) {
    result.why_not = std::string("cannot allocate: ") + std::strerror(errno);
    return result;
  }
  std::memcpy(copy, addr, size);
  if (mprotect(copy, span, PROT_READ) != 0 ||
      mremap(copy, span, span, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == MAP_FAILED) {
    result.why_not = std::string("cannot move the copy in place: ") + std::strerror(errno);
    result.huge_pages = false;
    munmap(copy, span);
    return result;
  }
  result.moved = true;
  return result;
}

}  // namespace vks::gguf
