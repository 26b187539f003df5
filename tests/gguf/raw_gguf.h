#pragma once
// Hand-assembles GGUF bytes, including malformed ones the GgufWriter refuses to produce.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace vks::test {

class RawGguf {
 public:
  RawGguf& u8(uint8_t v) { return put(v); }
  RawGguf& u32(uint32_t v) { return put(v); }
  RawGguf& u64(uint64_t v) { return put(v); }
  RawGguf& f32(float v) { return put(v); }
  RawGguf& str(const std::string& s) {
    u64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  // "GGUF", version, tensor count, kv count.
  RawGguf& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
  }
  RawGguf& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  RawGguf& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  RawGguf& pad_to(size_t alignment) {
    bytes.resize((bytes.size() + alignment - 1) / alignment * alignment, 0);
    return *this;
  }
  RawGguf& zeros(size_t n) {
    bytes.resize(bytes.size() + n, 0);
    return *this;
  }
  std::vector<uint8_t> bytes;

 private:
  template <typename T>
  RawGguf& put(T v) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
    return *this;
  }
};

}  // namespace vks::test
