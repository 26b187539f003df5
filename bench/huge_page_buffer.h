#pragma once
// A zeroed buffer of anonymous memory with transparent huge pages where the kernel grants them, as
// the CPU backend's weights have (engine/gguf/file_residence.h): benches that stream weights or
// probe the memory read what decode reads.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace vks::bench {

class HugePageBuffer {
 public:
  explicit HugePageBuffer(size_t bytes) : bytes_(bytes) {
    raw_ = mmap(nullptr, bytes_ + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw_ == MAP_FAILED) throw std::bad_alloc();
    data_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw_) + kHuge - 1) & ~(kHuge - 1));
    madvise(data_, bytes_, MADV_HUGEPAGE);
  }
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer() { munmap(raw_, bytes_ + kHuge); }

  uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  static constexpr size_t kHuge = size_t{2} << 20;
  size_t bytes_;
  void* raw_ = nullptr;
  uint8_t* data_ = nullptr;
};

}  // namespace vks::bench
