#pragma once
// Where a mapped GGUF's bytes live. The file is mapped read-only at a 2 MiB-aligned address, so that
// its bytes can later move, at the same addresses, into anonymous memory backed by transparent huge
// pages: what a CPU backend streaming every weight once per decode step wants. Reading a file-backed
// mapping in 4 KiB pages costs a TLB miss per page and stops the hardware prefetcher at each page
// boundary (a decode step reads four rows side by side); under a hypervisor each miss walks two page
// tables. Measured here: TinyLlama Q4_0 decode at 1 thread, 10-14 tok/s mapped, 21 with huge pages.
#include <cstddef>
#include <string>

namespace vks::gguf {

// mmap(PROT_READ, MAP_PRIVATE) of the first `size` bytes of fd at a 2 MiB-aligned address; nullptr
// with errno set on failure.
void* map_file_aligned(int fd, size_t size);

// `size` bytes (rounded up to whole pages) of zeroed, read-write anonymous memory at a 2 MiB-aligned
// address, transparent huge pages requested; nullptr with errno set on failure. *huge_pages (when
// given): whether the kernel accepted the request. Free with munmap(p, size rounded up to pages).
void* map_huge_page_memory(size_t size, bool* huge_pages = nullptr);

struct MemoryMove {
  bool moved = false;       // the bytes now live in anonymous memory
  bool huge_pages = false;  // transparent huge pages were requested for it (madvise accepted)
  std::string why_not;      // when !moved: the reason, for the log
};

// Replaces the read-only mapping [addr, addr + size) (from map_file_aligned) by anonymous, read-only
// memory holding the same bytes at the same addresses (mremap over it: pointers into it stay valid).
// Nothing changes when the machine's available memory cannot hold `size` beside a margin, or a call
// fails; why_not says which. Not safe while another thread reads the range.
MemoryMove move_mapping_into_memory(void* addr, size_t size);

// The kernel's transparent huge page mode (/sys/kernel/mm/transparent_hugepage/enabled: "always",
// "madvise" or "never"); "" where it cannot be read. Under "never" the moved bytes get 4 KiB pages.
std::string transparent_huge_pages_mode();

}  // namespace vks::gguf
