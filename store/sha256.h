#pragma once
// Streaming SHA-256 (FIPS 180-4), so `vkstream pull` can check a download against the digest the
// source publishes without depending on a crypto library.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vks::store {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Lower-case hex digest; the object must not be updated afterwards.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Digest of a whole file, read in chunks; throws vks::Error (kIo) when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace vks::store
