#include "protocol/value.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace vks::proto {

std::optional<bool> Value::as_bool() const {
  if (const bool* b = std::get_if<bool>(&v_)) return *b;
  return std::nullopt;
}

std::optional<int64_t> Value::as_int() const {
  if (const int64_t* i = std::get_if<int64_t>(&v_)) return *i;
  if (const uint64_t* u = std::get_if<uint64_t>(&v_)) {
    if (*u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return static_cast<int64_t>(*u);
  }
  return std::nullopt;
}

std::optional<uint64_t> Value::as_uint() const {
  if (const uint64_t* u = std::get_if<uint64_t>(&v_)) return *u;
  if (const int64_t* i = std::get_if<int64_t>(&v_); i != nullptr && *i >= 0) return static_cast<uint64_t>(*i);
  return std::nullopt;
}

std::optional<double> Value::as_double() const {
  if (const double* d = std::get_if<double>(&v_)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  if (const uint64_t* u = std::get_if<uint64_t>(&v_)) return static_cast<double>(*u);
  return std::nullopt;
}

const std::string* Value::as_string() const { return std::get_if<std::string>(&v_); }
const Value::Array* Value::as_array() const { return std::get_if<Array>(&v_); }
const Value::Map* Value::as_map() const { return std::get_if<Map>(&v_); }

const Value* Value::find(std::string_view key) const {
  const Map* m = as_map();
  if (m == nullptr) return nullptr;
  for (const auto& [k, v] : *m) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string Value::get_string(std::string_view key, std::string fallback) const {
  const Value* v = find(key);
  if (v != nullptr && v->as_string() != nullptr) return *v->as_string();
  return fallback;
}

int64_t Value::get_int(std::string_view key, int64_t fallback) const {
  const Value* v = find(key);
  if (v == nullptr) return fallback;
  if (auto i = v->as_int()) return *i;
  if (auto d = v->as_double(); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18) return static_cast<int64_t>(*d);
  return fallback;
}

double Value::get_double(std::string_view key, double fallback) const {
  const Value* v = find(key);
  if (v == nullptr) return fallback;
  return v->as_double().value_or(fallback);
}

bool Value::get_bool(std::string_view key, bool fallback) const {
  const Value* v = find(key);
  if (v == nullptr) return fallback;
  return v->as_bool().value_or(fallback);
}

Value& Value::set(std::string key, Value v) {
  if (is_nil()) v_ = Map{};
  Map& m = std::get<Map>(v_);
  for (auto& [k, old] : m) {
    if (k == key) {
      old = std::move(v);
      return *this;
    }
  }
  m.emplace_back(std::move(key), std::move(v));
  return *this;
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid.
size_t utf8_sequence_length(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t len = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
  else return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

void append_json_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c == '\n') { out += "\\n"; ++i; }
    else if (c == '\r') { out += "\\r"; ++i; }
    else if (c == '\t') { out += "\\t"; ++i; }
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
    } else {
      const size_t len = utf8_sequence_length(s, i);
      if (len == 0) {
        out += "\xEF\xBF\xBD";
        ++i;
      } else {
        out.append(s, i, len);
        i += len;
      }
    }
  }
  out.push_back('"');
}

struct JsonVisitor {
  std::string& out;
  void operator()(std::monostate) const { out += "null"; }
  void operator()(bool b) const { out += b ? "true" : "false"; }
  void operator()(int64_t i) const { out += std::to_string(i); }
  void operator()(uint64_t u) const { out += std::to_string(u); }
  void operator()(double d) const {
    if (!std::isfinite(d)) {
      out += "null";  // JSON has no NaN/Inf
      return;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    out += buf;
  }
  void operator()(const std::string& s) const { append_json_string(out, s); }
  void operator()(const Value::Array& a) const {
    out.push_back('[');
    for (size_t i = 0; i < a.size(); ++i) {
      if (i != 0) out.push_back(',');
      out += a[i].to_json();
    }
    out.push_back(']');
  }
  void operator()(const Value::Map& m) const {
    out.push_back('{');
    for (size_t i = 0; i < m.size(); ++i) {
      if (i != 0) out.push_back(',');
      append_json_string(out, m[i].first);
      out.push_back(':');
      out += m[i].second.to_json();
    }
    out.push_back('}');
  }
};

}  // namespace

std::string Value::to_json() const {
  std::string out;
  std::visit(JsonVisitor{out}, v_);
  return out;
}

}  // namespace vks::proto
