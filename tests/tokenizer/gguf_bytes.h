#pragma once
// Builds small in-memory GGUF v3 files (metadata only) for tokenizer tests.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace vks::test {

class GgufBytes {
 public:
  GgufBytes& str(const std::string& key, const std::string& value) {
    key_header(key, 8);
    put_string(value);
    return *this;
  }
  GgufBytes& u32(const std::string& key, uint32_t value) {
    key_header(key, 4);
    put(value);
    return *this;
  }
  GgufBytes& boolean(const std::string& key, bool value) {
    key_header(key, 7);
    put(static_cast<uint8_t>(value ? 1 : 0));
    return *this;
  }
  GgufBytes& strings(const std::string& key, const std::vector<std::string>& values) {
    key_header(key, 9);
    put(static_cast<uint32_t>(8));
    put(static_cast<uint64_t>(values.size()));
    for (const std::string& v : values) put_string(v);
    return *this;
  }
  GgufBytes& floats(const std::string& key, const std::vector<float>& values) {
    key_header(key, 9);
    put(static_cast<uint32_t>(6));
    put(static_cast<uint64_t>(values.size()));
    for (const float v : values) put(v);
    return *this;
  }
  GgufBytes& ints(const std::string& key, const std::vector<int32_t>& values) {
    key_header(key, 9);
    put(static_cast<uint32_t>(5));
    put(static_cast<uint64_t>(values.size()));
    for (const int32_t v : values) put(v);
    return *this;
  }

  // The whole file: header (no tensors) + metadata.
  std::vector<uint8_t> bytes() const {
    uint8_t header[24];
    const uint32_t version = 3;
    const uint64_t n_tensors = 0;
    std::memcpy(header, "GGUF", 4);
    std::memcpy(header + 4, &version, 4);
    std::memcpy(header + 8, &n_tensors, 8);
    std::memcpy(header + 16, &n_kv_, 8);
    // Byte by byte: GCC 12 misfires -Warray-bounds / -Wnull-dereference on insert() or memcpy here.
    std::vector<uint8_t> out;
    out.reserve(sizeof(header) + body_.size());
    for (const uint8_t b : header) out.push_back(b);
    for (const uint8_t b : body_) out.push_back(b);
    return out;
  }

 private:
  template <typename T>
  static void append(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
  }
  template <typename T>
  void put(T v) { append(body_, v); }
  void put_string(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    body_.insert(body_.end(), s.begin(), s.end());
  }
  void key_header(const std::string& key, uint32_t type) {
    put_string(key);
    put(type);
    ++n_kv_;
  }
  std::vector<uint8_t> body_;
  uint64_t n_kv_ = 0;
};

}  // namespace vks::test
