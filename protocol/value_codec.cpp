#include "protocol/value_codec.h"

#include <stdexcept>

#include "protocol/msgpack_io.h"

namespace vks::proto {
namespace {

constexpr int kMaxDepth = 32;

void pack(msgpack::packer<msgpack::sbuffer>& pk, const Value& v) {
  if (v.is_nil()) {
    pk.pack_nil();
  } else if (auto b = v.as_bool()) {
    if (*b) pk.pack_true(); else pk.pack_false();
  } else if (const std::string* s = v.as_string()) {
    pk.pack(*s);
  } else if (const Value::Array* a = v.as_array()) {
    pk.pack_array(static_cast<uint32_t>(a->size()));
    for (const Value& e : *a) pack(pk, e);
  } else if (const Value::Map* m = v.as_map()) {
    pk.pack_map(static_cast<uint32_t>(m->size()));
    for (const auto& [k, e] : *m) {
      pk.pack(k);
      pack(pk, e);
    }
  } else if (auto i = v.as_int()) {
    pk.pack(*i);
  } else if (auto u = v.as_uint()) {
    pk.pack(*u);  // an unsigned beyond int64 (seeds)
  } else {
    pk.pack(v.as_double().value_or(0));
  }
}

Value from_object(const msgpack::object& o, int depth) {
  if (depth > kMaxDepth) throw std::runtime_error("message nested too deeply");
  switch (o.type) {
    case msgpack::type::NIL: return Value();
    case msgpack::type::BOOLEAN: return Value(o.via.boolean);
    case msgpack::type::POSITIVE_INTEGER: return Value(static_cast<uint64_t>(o.via.u64));
    case msgpack::type::NEGATIVE_INTEGER: return Value(static_cast<int64_t>(o.via.i64));
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return Value(o.via.f64);
    case msgpack::type::STR: return Value(std::string(o.via.str.ptr, o.via.str.size));
    case msgpack::type::BIN: return Value(std::string(o.via.bin.ptr, o.via.bin.size));
    case msgpack::type::ARRAY: {
      Value::Array a;
      a.reserve(o.via.array.size);
      for (uint32_t i = 0; i < o.via.array.size; ++i) a.push_back(from_object(o.via.array.ptr[i], depth + 1));
      return Value(std::move(a));
    }
    case msgpack::type::MAP: {
      Value::Map m;
      m.reserve(o.via.map.size);
      for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const msgpack::object_kv& kv = o.via.map.ptr[i];
        std::string key;
        if (kv.key.type == msgpack::type::STR) key.assign(kv.key.via.str.ptr, kv.key.via.str.size);
        else key = from_object(kv.key, depth + 1).to_json();  // non-string keys: their JSON text
        m.emplace_back(std::move(key), from_object(kv.val, depth + 1));
      }
      return Value(std::move(m));
    }
    case msgpack::type::EXT: return Value();  // the protocol uses no extensions
  }
  return Value();
}

}  // namespace

std::string pack_value(const Value& v) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pack(pk, v);
  return std::string(buf.data(), buf.size());
}

Result<Value> unpack_value(std::string_view bytes) {
  try {
    // skim checks every array/map count against the bytes left before msgpack reserves memory
    // for the elements (a 5-byte header may claim millions of them).
    if (auto bad = detail::skim(bytes)) return *bad;
    std::size_t off = 0;
    // Limits guard against hostile sizes: nothing larger than the frame itself can be legitimate.
    const std::size_t n = bytes.size();
    msgpack::unpack_limit limit(n, n, n, n, n, kMaxDepth);
    msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size(), off, nullptr, nullptr, limit);
    if (off != bytes.size()) return make_error(WireError::kBadFrame, "trailing bytes after a msgpack message");
    return from_object(oh.get(), 0);
  } catch (const std::exception& e) {
    return make_error(WireError::kBadFrame, std::string("malformed msgpack message: ") + e.what());
  }
}

}  // namespace vks::proto
