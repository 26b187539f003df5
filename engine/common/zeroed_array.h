#pragma once
// A heap array of n zeroed T from calloc. A large one comes from the kernel's zero pages (mmap) and
// is touched only where it is written, where std::vector's value-initialization writes every byte
// up front: the CPU backend's 256 MiB KV pool zero-filled took most of its start (issue 37).
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace vks {

template <class T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable_v<T>, "calloc's zero bytes must be a T");

 public:
  ZeroedArray() = default;
  // Throws std::bad_alloc when the memory is not there.
  explicit ZeroedArray(size_t n) : data_(static_cast<T*>(std::calloc(n == 0 ? 1 : n, sizeof(T)))), size_(n) {
    if (!data_) throw std::bad_alloc();
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  size_t size_ = 0;
};

}  // namespace vks
