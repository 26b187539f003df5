#pragma once
// A read-only open-addressing hash index over a vector of strings the owner keeps: lookup gives the
// position of the first equal string. Built with one flat array (no allocation per entry), so a
// BPE vocabulary's few hundred thousand merges index in milliseconds.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vks {

class StringIndex {
 public:
  // Indexes strings[i] for every i where keep(strings[i]); the first of equal strings wins.
  // `strings` must outlive the index and stay unchanged.
  template <typename Keep>
  void build(const std::vector<std::string>& strings, Keep keep) {
    strings_ = &strings;
    size_t capacity = 16;
    while (capacity < strings.size() * 2) capacity *= 2;
    mask_ = capacity - 1;
    slots_.assign(capacity, -1);
    for (size_t i = 0; i < strings.size(); ++i) {
      if (!keep(strings[i])) continue;
      for (size_t slot = hash(strings[i]) & mask_;; slot = (slot + 1) & mask_) {
        const int32_t at = slots_[slot];
        if (at < 0) {
          slots_[slot] = static_cast<int32_t>(i);
          break;
        }
        if (strings[static_cast<size_t>(at)] == strings[i]) break;  // a repeat: the first one stays
      }
    }
  }

  // Position of `key` in the indexed vector, or -1.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return -1;
    for (size_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
      const int32_t at = slots_[slot];
      if (at < 0) return -1;
      if ((*strings_)[static_cast<size_t>(at)] == key) return at;
    }
  }

 private:
  static size_t hash(std::string_view s) {
    // FNV-1a: short keys (merge pairs are a few bytes) hash faster than with std::hash.
    uint64_t h = 1469598103934665603ull;
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }

  const std::vector<std::string>* strings_ = nullptr;
  std::vector<int32_t> slots_;
  size_t mask_ = 0;
};

}  // namespace vks
