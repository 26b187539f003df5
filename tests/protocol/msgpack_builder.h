#pragma once
// Test helper: build arbitrary msgpack values (including malformed-for-the-protocol ones) tersely.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST 1
#endif
#include <msgpack.hpp>

namespace vks::test {

struct V {
  enum class K { kNil, kBool, kInt, kUInt, kDouble, kStr, kBin, kArr, kMap };
  K k = K::kNil;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string s;
  std::vector<V> items;  // arrays; maps alternate key, value
};

inline V nil() { return {}; }
inline V b(bool v) { V x; x.k = V::K::kBool; x.b = v; return x; }
inline V i(int64_t v) { V x; x.k = V::K::kInt; x.i = v; return x; }
inline V u(uint64_t v) { V x; x.k = V::K::kUInt; x.u = v; return x; }
inline V d(double v) { V x; x.k = V::K::kDouble; x.d = v; return x; }
inline V s(std::string v) { V x; x.k = V::K::kStr; x.s = std::move(v); return x; }
inline V bin(std::string v) { V x; x.k = V::K::kBin; x.s = std::move(v); return x; }
inline V arr(std::initializer_list<V> items) { V x; x.k = V::K::kArr; x.items = items; return x; }
inline V arr_of_ints(size_t n, int64_t value) {
  V x; x.k = V::K::kArr;
  for (size_t j = 0; j < n; ++j) x.items.push_back(i(value));
  return x;
}
inline V map(std::initializer_list<std::pair<V, V>> kvs) {
  V x; x.k = V::K::kMap;
  for (const auto& [key, val] : kvs) { x.items.push_back(key); x.items.push_back(val); }
  return x;
}
// Map with string keys.
inline V obj(std::initializer_list<std::pair<std::string, V>> kvs) {
  V x; x.k = V::K::kMap;
  for (const auto& [key, val] : kvs) { x.items.push_back(s(key)); x.items.push_back(val); }
  return x;
}
// Returns a copy of map m with key set to v (added or replaced).
inline V with(V m, const std::string& key, V v) {
  for (size_t j = 0; j + 1 < m.items.size(); j += 2) {
    if (m.items[j].k == V::K::kStr && m.items[j].s == key) { m.items[j + 1] = std::move(v); return m; }
  }
  m.items.push_back(s(key));
  m.items.push_back(std::move(v));
  return m;
}
inline V without(V m, const std::string& key) {
  V out; out.k = V::K::kMap;
  for (size_t j = 0; j + 1 < m.items.size(); j += 2) {
    if (m.items[j].k == V::K::kStr && m.items[j].s == key) continue;
    out.items.push_back(m.items[j]);
    out.items.push_back(m.items[j + 1]);
  }
  return out;
}

struct Sink { std::string* out; void write(const char* p, size_t n) { out->append(p, n); } };

inline void pack_into(msgpack::packer<Sink>& pk, const V& v) {
  switch (v.k) {
    case V::K::kNil: pk.pack_nil(); break;
    case V::K::kBool: v.b ? pk.pack_true() : pk.pack_false(); break;
    case V::K::kInt: pk.pack_int64(v.i); break;
    case V::K::kUInt: pk.pack_uint64(v.u); break;
    case V::K::kDouble: {  // always float64 (pack_double would write integral values as ints)
      uint64_t bits = 0;
      std::memcpy(&bits, &v.d, 8);
      char buf[9];
      buf[0] = static_cast<char>(0xcb);
      for (int k = 0; k < 8; ++k) buf[1 + k] = static_cast<char>(bits >> (56 - 8 * k));
      pk.pack_bin_body(buf, 9);  // raw append: pack_bin_body writes the bytes as they are
      break;
    }
    case V::K::kStr: pk.pack_str(static_cast<uint32_t>(v.s.size())); pk.pack_str_body(v.s.data(), static_cast<uint32_t>(v.s.size())); break;
    case V::K::kBin: pk.pack_bin(static_cast<uint32_t>(v.s.size())); pk.pack_bin_body(v.s.data(), static_cast<uint32_t>(v.s.size())); break;
    case V::K::kArr:
      pk.pack_array(static_cast<uint32_t>(v.items.size()));
      for (const V& it : v.items) pack_into(pk, it);
      break;
    case V::K::kMap:
      pk.pack_map(static_cast<uint32_t>(v.items.size() / 2));
      for (const V& it : v.items) pack_into(pk, it);
      break;
  }
}

inline std::string pack(const V& v) {
  std::string out;
  Sink sink{&out};
  msgpack::packer<Sink> pk(sink);
  pack_into(pk, v);
  return out;
}

inline std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out.push_back(' ');
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

}  // namespace vks::test
