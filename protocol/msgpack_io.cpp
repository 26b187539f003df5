#include "protocol/msgpack_io.h"

#include <array>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>

namespace vks::proto::detail {
namespace {

uint64_t read_be(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

ProtocolError bad_frame(std::string message) {
  return make_error(WireError::kBadFrame, std::move(message));
}

}  // namespace

std::optional<ProtocolError> skim(std::string_view payload) {
  const auto* data = reinterpret_cast<const uint8_t*>(payload.data());
  const size_t len = payload.size();
  if (len == 0) return bad_frame("empty payload: expected one msgpack map");
  std::array<uint64_t, kMaxDepth + 1> left{};
  size_t depth = 0;
  left[0] = 1;
  size_t pos = 0;
  // Skips n payload bytes after a header of h bytes; false when the frame ends first.
  auto need = [&](size_t n) { return n <= len - pos; };
  while (depth > 0 || left[0] > 0) {
    if (left[depth] == 0) {
      --depth;
      continue;
    }
    --left[depth];
    if (!need(1)) return bad_frame("truncated msgpack value at byte " + std::to_string(pos));
    const uint8_t b = data[pos++];
    uint64_t items = 0;  // for containers: number of child values
    bool container = false;
    size_t skip = 0;
    size_t len_bytes = 0;  // bytes of a following length field
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
      skip = 0;
    } else if (b >= 0x80 && b <= 0x8f) {
      container = true, items = 2u * (b & 0x0f);
    } else if (b >= 0x90 && b <= 0x9f) {
      container = true, items = b & 0x0f;
    } else if (b >= 0xa0 && b <= 0xbf) {
      skip = b & 0x1f;
    } else {
      switch (b) {
        case 0xc4: case 0xd9: len_bytes = 1; break;   // bin8, str8
        case 0xc5: case 0xda: len_bytes = 2; break;   // bin16, str16
        case 0xc6: case 0xdb: len_bytes = 4; break;   // bin32, str32
        case 0xc7: len_bytes = 1; skip = 1; break;    // ext8: len, type
        case 0xc8: len_bytes = 2; skip = 1; break;
        case 0xc9: len_bytes = 4; skip = 1; break;
        case 0xca: skip = 4; break;
        case 0xcb: skip = 8; break;
        case 0xcc: case 0xd0: skip = 1; break;
        case 0xcd: case 0xd1: skip = 2; break;
        case 0xce: case 0xd2: skip = 4; break;
        case 0xcf: case 0xd3: skip = 8; break;
        case 0xd4: skip = 2; break;   // fixext1: type + 1
        case 0xd5: skip = 3; break;
        case 0xd6: skip = 5; break;
        case 0xd7: skip = 9; break;
        case 0xd8: skip = 17; break;
        case 0xdc: case 0xde:
          if (!need(2)) return bad_frame("truncated msgpack container header");
          items = read_be(data + pos, 2);
          pos += 2;
          container = true;
          if (b == 0xde) items *= 2;
          break;
        case 0xdd: case 0xdf:
          if (!need(4)) return bad_frame("truncated msgpack container header");
          items = read_be(data + pos, 4);
          pos += 4;
          container = true;
          if (b == 0xdf) items *= 2;
          break;
        default:  // 0xc1
          return bad_frame("invalid msgpack byte 0xc1 at byte " + std::to_string(pos - 1));
      }
    }
    if (len_bytes > 0) {
      if (!need(len_bytes)) return bad_frame("truncated msgpack length at byte " + std::to_string(pos));
      skip += read_be(data + pos, len_bytes);
      pos += len_bytes;
    }
    if (container) {
      if (items > len - pos)
        return bad_frame("msgpack container at byte " + std::to_string(pos) + " claims more items than the frame holds");
      if (items > 0) {
        if (depth + 1 > kMaxDepth) return bad_frame("msgpack nesting deeper than " + std::to_string(kMaxDepth));
        ++depth;
        left[depth] = items;
      }
    } else {
      if (!need(skip)) return bad_frame("truncated msgpack value at byte " + std::to_string(pos));
      pos += skip;
    }
  }
  if (pos != len)
    return bad_frame("trailing bytes after the msgpack value (" + std::to_string(len - pos) + " bytes)");
  return std::nullopt;
}

Result<msgpack::object_handle> decode(std::string_view payload) {
  if (auto err = skim(payload)) return *err;
  try {
    size_t off = 0;
    const msgpack::unpack_limit limit(payload.size(), payload.size(), payload.size(), payload.size(),
                                      payload.size(), kMaxDepth + 2);
    msgpack::object_handle oh = msgpack::unpack(payload.data(), payload.size(), off, nullptr, nullptr, limit);
    if (off != payload.size()) return bad_frame("trailing bytes after the msgpack value");
    return oh;
  } catch (const std::exception& e) {
    return bad_frame(std::string("invalid msgpack: ") + e.what());
  }
}

bool as_int64(const msgpack::object& o, int64_t& out) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) {
    if (o.via.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    out = static_cast<int64_t>(o.via.u64);
    return true;
  }
  if (o.type == msgpack::type::NEGATIVE_INTEGER) {
    out = o.via.i64;
    return true;
  }
  return false;
}

bool as_double(const msgpack::object& o, double& out) {
  switch (o.type) {
    case msgpack::type::POSITIVE_INTEGER: out = static_cast<double>(o.via.u64); return true;
    case msgpack::type::NEGATIVE_INTEGER: out = static_cast<double>(o.via.i64); return true;
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: out = o.via.f64; return true;
    default: return false;
  }
}

bool as_string(const msgpack::object& o, std::string_view& out) {
  if (o.type != msgpack::type::STR) return false;
  out = std::string_view(o.via.str.ptr, o.via.str.size);
  return true;
}

std::string_view type_name(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "bool";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER: return "int";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "float";
    case msgpack::type::STR: return "str";
    case msgpack::type::BIN: return "bin";
    case msgpack::type::ARRAY: return "array";
    case msgpack::type::MAP: return "map";
    case msgpack::type::EXT: return "ext";
  }
  return "unknown";
}

MapReader::MapReader(const msgpack::object& map, std::string prefix) : map_(map), prefix_(std::move(prefix)) {}

const msgpack::object* MapReader::find(std::string_view key) const {
  if (map_.type != msgpack::type::MAP) return nullptr;
  for (uint32_t i = 0; i < map_.via.map.size; ++i) {
    const msgpack::object_kv& kv = map_.via.map.ptr[i];
    std::string_view k;
    if (as_string(kv.key, k) && k == key) {
      // The first occurrence of a key counts; nil means "absent".
      return kv.val.type == msgpack::type::NIL ? nullptr : &kv.val;
    }
  }
  return nullptr;
}

std::string MapReader::field_name(std::string_view key) const {
  if (prefix_.empty()) return std::string(key);
  return prefix_ + "." + std::string(key);
}

bool MapReader::fail(WireError code, std::string_view key, std::string message) {
  error_ = make_error(code, field_name(key) + ": " + message, field_name(key));
  return false;
}

bool MapReader::fail_missing(std::string_view key) {
  return fail(WireError::kMissingField, key, "required field is missing");
}

bool MapReader::fail_type(std::string_view key, std::string_view expected) {
  const msgpack::object* o = find(key);
  return fail(WireError::kInvalidField, key,
              "expected " + std::string(expected) + ", got " + std::string(o ? type_name(*o) : "nil"));
}

bool MapReader::get_string(std::string_view key, std::string& out, bool required, size_t max_bytes,
                           bool allow_empty) {
  const msgpack::object* o = find(key);
  if (!o) return required ? fail_missing(key) : true;
  std::string_view v;
  if (!as_string(*o, v)) return fail_type(key, "string");
  if (v.size() > max_bytes)
    return fail(WireError::kInvalidField, key, "string of " + std::to_string(v.size()) +
                                                    " bytes exceeds the limit of " + std::to_string(max_bytes));
  if (!allow_empty && v.empty()) return fail(WireError::kInvalidField, key, "must not be empty");
  out.assign(v);
  return true;
}

bool MapReader::get_int(std::string_view key, int64_t& out, bool required, int64_t min, int64_t max) {
  const msgpack::object* o = find(key);
  if (!o) return required ? fail_missing(key) : true;
  int64_t v = 0;
  if (!as_int64(*o, v)) {
    if (o->type == msgpack::type::POSITIVE_INTEGER)
      return fail(WireError::kInvalidField, key, "integer out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return fail_type(key, "integer");
  }
  if (v < min || v > max)
    return fail(WireError::kInvalidField, key, "value " + std::to_string(v) + " out of range [" +
                                                    std::to_string(min) + ", " + std::to_string(max) + "]");
  out = v;
  return true;
}

bool MapReader::get_i32(std::string_view key, int32_t& out, bool required, int32_t min, int32_t max) {
  int64_t v = out;
  if (!get_int(key, v, required, min, max)) return false;
  out = static_cast<int32_t>(v);
  return true;
}

bool MapReader::get_u64(std::string_view key, uint64_t& out, bool required) {
  const msgpack::object* o = find(key);
  if (!o) return required ? fail_missing(key) : true;
  if (o->type == msgpack::type::POSITIVE_INTEGER) {
    out = o->via.u64;
    return true;
  }
  if (o->type == msgpack::type::NEGATIVE_INTEGER) return fail(WireError::kInvalidField, key, "must not be negative");
  return fail_type(key, "non-negative integer");
}

bool MapReader::get_double(std::string_view key, double& out, bool required, double min, double max) {
  const msgpack::object* o = find(key);
  if (!o) return required ? fail_missing(key) : true;
  double v = 0;
  if (!as_double(*o, v)) return fail_type(key, "number");
  if (!std::isfinite(v)) return fail(WireError::kInvalidField, key, "must be a finite number");
  if (v < min || v > max) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "value %g out of range [%g, %g]", v, min, max);
    return fail(WireError::kInvalidField, key, buf);
  }
  out = v;
  return true;
}

bool MapReader::get_float(std::string_view key, float& out, bool required, float min, float max) {
  double v = out;
  if (!get_double(key, v, required, min, max)) return false;
  out = static_cast<float>(v);
  return true;
}

bool MapReader::get_bool(std::string_view key, bool& out, bool required) {
  const msgpack::object* o = find(key);
  if (!o) return required ? fail_missing(key) : true;
  if (o->type != msgpack::type::BOOLEAN) return fail_type(key, "bool");
  out = o->via.boolean;
  return true;
}

bool MapReader::get_array(std::string_view key, const msgpack::object*& out, bool required, size_t max_items) {
  const msgpack::object* o = find(key);
  if (!o) return required ? fail_missing(key) : true;
  if (o->type != msgpack::type::ARRAY) return fail_type(key, "array");
  if (o->via.array.size > max_items)
    return fail(WireError::kInvalidField, key, "array of " + std::to_string(o->via.array.size) +
                                                    " items exceeds the limit of " + std::to_string(max_items));
  out = o;
  return true;
}

bool MapReader::get_map(std::string_view key, const msgpack::object*& out, bool required) {
  const msgpack::object* o = find(key);
  if (!o) return required ? fail_missing(key) : true;
  if (o->type != msgpack::type::MAP) return fail_type(key, "map");
  out = o;
  return true;
}

std::optional<Tag> read_tag(const msgpack::object& map, size_t max_bytes) {
  MapReader r(map);
  const msgpack::object* o = r.find("tag");
  if (!o) return Tag::none();
  int64_t i = 0;
  if (as_int64(*o, i)) return Tag::of(i);
  std::string_view s;
  if (as_string(*o, s) && s.size() <= max_bytes) return Tag::of(std::string(s));
  return std::nullopt;
}

msgpack::packer<StringSink>& MapWriter::key(std::string_view k) {
  ++count_;
  pack_str(pk_, k);
  return pk_;
}

MapWriter& MapWriter::tag(const Tag& t) {
  if (t.kind == Tag::Kind::kInt) i64("tag", t.i);
  if (t.kind == Tag::Kind::kString) str("tag", t.s);
  return *this;
}

void MapWriter::finish_into(std::string& out) const {
  StringSink sink{&out};
  msgpack::packer<StringSink> pk(sink);
  pk.pack_map(count_);
  out.append(body_);
}

std::string MapWriter::finish() const {
  std::string out;
  out.reserve(body_.size() + 5);
  finish_into(out);
  return out;
}

void pack_str(msgpack::packer<StringSink>& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

std::string pack_int_array(const int32_t* data, size_t n) {
  std::string out;
  StringSink sink{&out};
  msgpack::packer<StringSink> pk(sink);
  pk.pack_array(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) pk.pack_int32(data[i]);
  return out;
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (no overlongs, surrogates or > U+10FFFF);
// 0 when invalid.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) { n = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
  else if (c >= 0xF0 && c <= 0xF4) { n = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string printable(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    const size_t n = utf8_sequence_length(bytes, i);
    if (n == 0 || c < 0x20 || c == 0x7F || c == '\\') {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace vks::proto::detail
