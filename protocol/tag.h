#pragma once
// The optional "tag" a client puts in any request; the server echoes it in the direct answer
// (never in stream events) so a client can pair answers with requests. An integer or a string.
#include <cstdint>
#include <string>

namespace vks::proto {

struct Tag {
  enum class Kind { kNone, kInt, kString };
  Kind kind = Kind::kNone;
  int64_t i = 0;       // kInt (msgpack positive ints above INT64_MAX are rejected)
  std::string s;       // kString (≤ ProtocolLimits::max_tag_bytes)

  static Tag none() { return {}; }
  static Tag of(int64_t v) { Tag t; t.kind = Kind::kInt; t.i = v; return t; }
  static Tag of(std::string v) { Tag t; t.kind = Kind::kString; t.s = std::move(v); return t; }
  bool has_value() const { return kind != Kind::kNone; }
  bool operator==(const Tag&) const = default;
};

}  // namespace vks::proto
