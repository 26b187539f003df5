#pragma once
// Internal helpers of vks_protocol: safe msgpack decoding into msgpack-cxx objects and a small
// map/array writer. Not part of the public API (other owners use requests.h / responses.h).
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST 1
#endif
#include <msgpack.hpp>

#include "protocol/errors.h"
#include "protocol/tag.h"

namespace vks::proto::detail {

// Always a msgpack float64 (0xcb): msgpack-cxx's pack_double turns integral doubles into integers.
inline void pack_f64(std::string& out, double v) {
  uint64_t bits = 0;
  static_assert(sizeof bits == sizeof v);
  std::memcpy(&bits, &v, sizeof v);
  char buf[9];
  buf[0] = static_cast<char>(0xcb);
  for (int k = 0; k < 8; ++k) buf[1 + k] = static_cast<char>(bits >> (56 - 8 * k));
  out.append(buf, 9);
}

inline constexpr size_t kMaxDepth = 8;  // deepest server message (replay → event → logprobs → top) is 7

// Checks that payload is exactly one complete msgpack value, nesting ≤ kMaxDepth, every container
// count plausible for the bytes left (so the decoder never allocates for elements that are not
// there). nullopt when fine; a bad_frame error otherwise.
std::optional<ProtocolError> skim(std::string_view payload);

// skim + unpack. The handle owns the zone the object points into.
Result<msgpack::object_handle> decode(std::string_view payload);

// Field access on a decoded map with validation. Each getter returns false after recording an error
// (missing_field or invalid_field naming prefix + key); absent optional fields (or nil) leave `out`.
class MapReader {
 public:
  explicit MapReader(const msgpack::object& map, std::string prefix = {});

  const msgpack::object* find(std::string_view key) const;  // nullptr when absent or nil
  bool has(std::string_view key) const { return find(key) != nullptr; }

  bool get_string(std::string_view key, std::string& out, bool required, size_t max_bytes,
                  bool allow_empty = true);
  bool get_int(std::string_view key, int64_t& out, bool required, int64_t min, int64_t max);
  bool get_i32(std::string_view key, int32_t& out, bool required, int32_t min, int32_t max);
  bool get_u64(std::string_view key, uint64_t& out, bool required);
  bool get_double(std::string_view key, double& out, bool required, double min, double max);
  bool get_float(std::string_view key, float& out, bool required, float min, float max);
  bool get_bool(std::string_view key, bool& out, bool required);
  // An array; out points into the object. Checks size ≤ max_items.
  bool get_array(std::string_view key, const msgpack::object*& out, bool required, size_t max_items);
  bool get_map(std::string_view key, const msgpack::object*& out, bool required);

  bool fail(WireError code, std::string_view key, std::string message);
  bool fail_missing(std::string_view key);
  // Adopts the error recorded by a reader of a nested map; returns false.
  bool fail_from(MapReader& inner) { error_ = inner.take_error(); return false; }
  bool fail_type(std::string_view key, std::string_view expected);
  std::string field_name(std::string_view key) const;

  const ProtocolError& error() const { return *error_; }
  ProtocolError take_error() { return std::move(*error_); }

 private:
  const msgpack::object& map_;
  std::string prefix_;
  std::optional<ProtocolError> error_;
};

// Scalar conversions without exceptions.
bool as_int64(const msgpack::object& o, int64_t& out);     // POSITIVE/NEGATIVE_INTEGER in range
bool as_double(const msgpack::object& o, double& out);     // integer or float
bool as_string(const msgpack::object& o, std::string_view& out);
std::string_view type_name(const msgpack::object& o);      // "int", "str", ... for messages
// Client-supplied bytes made safe to quote in an error message (which must be valid UTF-8 for
// strict decoders): valid printable UTF-8 is kept, control characters and bytes that are not
// valid UTF-8 become \xNN.
std::string printable(std::string_view bytes);

// Tag from a top-level map: nullopt when present but invalid.
std::optional<Tag> read_tag(const msgpack::object& map, size_t max_bytes);

// ---- writing ----------------------------------------------------------------------------------

struct StringSink {
  std::string* s;
  void write(const char* p, size_t n) { s->append(p, n); }
};

// Builds a map whose entry count is known only at the end: entries are packed into a body buffer,
// finish() emits the header then the body.
class MapWriter {
 public:
  MapWriter() : pk_(sink_) {}
  MapWriter(const MapWriter&) = delete;
  MapWriter& operator=(const MapWriter&) = delete;

  msgpack::packer<StringSink>& key(std::string_view k);  // pack the value right after
  MapWriter& str(std::string_view k, std::string_view v) { key(k).pack_str(static_cast<uint32_t>(v.size())).pack_str_body(v.data(), static_cast<uint32_t>(v.size())); return *this; }
  MapWriter& i64(std::string_view k, int64_t v) { key(k).pack_int64(v); return *this; }
  MapWriter& u64(std::string_view k, uint64_t v) { key(k).pack_uint64(v); return *this; }
  MapWriter& f64(std::string_view k, double v) { key(k); pack_f64(body_, v); return *this; }
  MapWriter& boolean(std::string_view k, bool v) { key(k); v ? pk_.pack_true() : pk_.pack_false(); return *this; }
  MapWriter& raw(std::string_view k, std::string_view packed) { key(k); body_.append(packed); return *this; }
  MapWriter& tag(const Tag& t);  // "tag" entry when t has a value

  std::string& body() { return body_; }  // for values packed by hand after key()
  std::string finish() const;   // header + body
  void finish_into(std::string& out) const;

 private:
  std::string body_;
  StringSink sink_{&body_};
  msgpack::packer<StringSink> pk_;
  uint32_t count_ = 0;
};

void pack_str(msgpack::packer<StringSink>& pk, std::string_view s);
std::string pack_int_array(const int32_t* data, size_t n);

}  // namespace vks::proto::detail
