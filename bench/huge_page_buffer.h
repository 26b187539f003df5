#pragma once
// A zeroed buffer of anonymous memory with transparent huge pages where the kernel grants them, as
// the CPU backend's weights have (engine/gguf/file_residence.h, whose allocation it uses): benches
// that stream weights or probe the memory read what decode reads.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

#include "engine/gguf/file_residence.h"

namespace vks::bench {

class HugePageBuffer {
 public:
  explicit HugePageBuffer(size_t bytes) : bytes_(bytes) {
    data_ = static_cast<uint8_t*>(gguf::map_huge_page_memory(bytes_));
    if (data_ == nullptr) throw std::bad_alloc();
  }
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer() { munmap(data_, bytes_); }

  uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  size_t bytes_;
  uint8_t* data_ = nullptr;
};

}  // namespace vks::bench
