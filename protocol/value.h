#pragma once
// A dynamic value mirroring one msgpack object (the protocol's maps, arrays and scalars), so callers
// can read fields the typed structs do not cover (stats, model info) and print events as JSON.
// Self-contained (standard library only): it is installed with the C++ client, whose public
// vkstream::Value it is. protocol/value_codec.h converts it to and from msgpack bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace vks::proto {

class Value {
 public:
  using Array = std::vector<Value>;
  using Map = std::vector<std::pair<std::string, Value>>;  // wire order kept; keys stringified

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : v_(b) {}
  Value(int v) : v_(int64_t{v}) {}
  Value(int64_t v) : v_(v) {}
  Value(uint64_t v) : v_(v) {}
  Value(double v) : v_(v) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(Array a) : v_(std::move(a)) {}
  Value(Map m) : v_(std::move(m)) {}

  bool is_nil() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_) || std::holds_alternative<uint64_t>(v_); }
  bool is_number() const { return is_int() || std::holds_alternative<double>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_array() const { return std::holds_alternative<Array>(v_); }
  bool is_map() const { return std::holds_alternative<Map>(v_); }

  // Typed reads; nullopt when the value has another type (or an integer does not fit).
  std::optional<bool> as_bool() const;
  std::optional<int64_t> as_int() const;
  std::optional<uint64_t> as_uint() const;  // a non-negative integer
  std::optional<double> as_double() const;  // any number
  const std::string* as_string() const;
  const Array* as_array() const;
  const Map* as_map() const;

  // Map lookup; nullptr when this is not a map or the key is absent.
  const Value* find(std::string_view key) const;
  // Convenience reads of a map field with a fallback.
  std::string get_string(std::string_view key, std::string fallback = {}) const;
  int64_t get_int(std::string_view key, int64_t fallback = 0) const;
  double get_double(std::string_view key, double fallback = 0) const;
  bool get_bool(std::string_view key, bool fallback = false) const;

  // Appends/sets a map field (turns a nil value into a map).
  Value& set(std::string key, Value v);

  // Compact JSON (binary strings are emitted as JSON strings with \u escapes for control bytes;
  // invalid UTF-8 bytes are replaced by U+FFFD so the output is always valid JSON).
  std::string to_json() const;

 private:
  std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, Array, Map> v_;
};

}  // namespace vks::proto
