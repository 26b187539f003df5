#pragma once
// Deterministic byte-level mutations for driving parsers without libFuzzer.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace vks::test {

inline void mutate(std::vector<uint8_t>& b, std::mt19937_64& rng) {
  static const uint64_t kInteresting[] = {0, 1, 2, 3, 4, 7, 8, 9, 12, 13, 31, 32, 33, 64, 255, 256, 0x7F, 0x80,
                                          0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1ull << 32, 1ull << 62,
                                          1ull << 63, ~0ull};
  if (b.empty()) {
    b.push_back(static_cast<uint8_t>(rng()));
    return;
  }
  auto pos = [&](size_t span) { return static_cast<size_t>(rng() % (b.size() - std::min(span, b.size() - 1))); };
  switch (rng() % 7) {
    case 0:  // flip a bit
      b[pos(1)] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    case 1:  // random byte
      b[pos(1)] = static_cast<uint8_t>(rng());
      break;
    case 2: {  // interesting 4- or 8-byte value
      const uint64_t v = kInteresting[rng() % std::size(kInteresting)];
      const size_t n = (rng() % 2) ? 4 : 8;
      if (b.size() >= n) std::memcpy(b.data() + pos(n), &v, n);
      break;
    }
    case 3:  // truncate
      b.resize(rng() % b.size());
      break;
    case 4: {  // delete a range
      const size_t at = pos(1);
      const size_t n = std::min<size_t>(1 + rng() % 16, b.size() - at);
      b.erase(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
      break;
    }
    case 5: {  // duplicate a range
      const size_t at = pos(1);
      const size_t n = std::min<size_t>(1 + rng() % 16, b.size() - at);
      std::vector<uint8_t> out;
      out.reserve(b.size() + n);
      const size_t dest = pos(1);
      for (size_t k = 0; k < b.size(); ++k) {
        if (k == dest) {
          for (size_t m = 0; m < n; ++m) out.push_back(b[at + m]);
        }
        out.push_back(b[k]);
      }
      b.swap(out);
      break;
    }
    default: {  // small add/subtract on a byte (off-by-one lengths)
      b[pos(1)] += static_cast<uint8_t>((rng() % 2) ? 1 : 255);
      break;
    }
  }
}

}  // namespace vks::test
