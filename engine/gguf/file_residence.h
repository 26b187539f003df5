#pragma once
// Memory for the copy of a model's weights that a CPU backend streams once per decode step
// (engine/cpu/cpu_weights.h): anonymous, 2 MiB-aligned, with transparent huge pages requested.
// Reading a file-backed mapping in 4 KiB pages costs a TLB miss per page and stops the hardware
// prefetcher at each page boundary; under a hypervisor each miss walks two page tables. Measured
// here: TinyLlama Q4_0 decode at 1 thread, 10-14 tok/s mapped, 21 with huge pages.
#include <cstddef>
#include <string>

namespace vks::gguf {

// `size` bytes (rounded up to whole pages) of zeroed, read-write anonymous memory at a 2 MiB-aligned
// address, transparent huge pages requested; nullptr with errno set on failure. *huge_pages (when
// given): whether the kernel accepted the request. Free with munmap(p, size).
void* map_huge_page_memory(size_t size, bool* huge_pages = nullptr);

// Why `size` bytes should not be copied into anonymous memory now: the machine's available memory
// (page cache the kernel can drop included) could not hold them beside a margin left to other
// processes. "" when they fit or the figure cannot be read.
std::string memory_shortfall(size_t size);

// The kernel's transparent huge page mode (/sys/kernel/mm/transparent_hugepage/enabled: "always",
// "madvise" or "never"); "" where it cannot be read. Under "never" the copy gets 4 KiB pages.
std::string transparent_huge_pages_mode();

}  // namespace vks::gguf
