#include "server/catchup_mark.h"

#include <cstdint>

namespace vks::server {
namespace {

uint8_t byte_at(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

}  // namespace

std::string with_catchup_mark(std::string_view event) {
  if (event.empty()) return std::string(event);
  // The map header: fixmap, map 16 or map 32 (big endian counts).
  const uint8_t b = byte_at(event, 0);
  uint64_t count = 0;
  size_t header = 0;
  if ((b & 0xf0) == 0x80) {
    count = b & 0x0f;
    header = 1;
  } else if (b == 0xde && event.size() >= 3) {
    count = (uint64_t{byte_at(event, 1)} << 8) | byte_at(event, 2);
    header = 3;
  } else if (b == 0xdf && event.size() >= 5) {
    count = (uint64_t{byte_at(event, 1)} << 24) | (uint64_t{byte_at(event, 2)} << 16) |
            (uint64_t{byte_at(event, 3)} << 8) | byte_at(event, 4);
    header = 5;
  } else {
    return std::string(event);
  }
  ++count;
  std::string out;
  out.reserve(event.size() + 16);
  if (count <= 15) {
    out.push_back(static_cast<char>(0x80 | count));
  } else if (count <= 0xffff) {
    out.push_back(static_cast<char>(0xde));
    out.push_back(static_cast<char>(count >> 8));
    out.push_back(static_cast<char>(count & 0xff));
  } else {
    out.push_back(static_cast<char>(0xdf));
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((count >> shift) & 0xff));
  }
  out.append(event.substr(header));
  out.push_back(static_cast<char>(0xa7));  // fixstr of 7
  out.append("catchup");
  out.push_back(static_cast<char>(0xc3));  // true
  return out;
}

}  // namespace vks::server
