#include "engine/chat/jinja_strings.h"

#include <algorithm>
#include <cctype>

#include "engine/chat/jinja_error.h"

namespace vks::jinja::str {
namespace {

size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// Decodes the code point at s[i] (length n); invalid sequences give 0xFFFD.
uint32_t decode_at(std::string_view s, size_t i, size_t n) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  if (n == 1) return b(0) < 0x80 ? b(0) : 0xFFFD;
  uint32_t cp = b(0) & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (b(k) & 0x3F);
  return cp;
}

size_t valid_length_at(std::string_view s, size_t i) {
  const size_t n = sequence_length(static_cast<unsigned char>(s[i]));
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

bool is_unicode_space(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

struct CodePoint {
  size_t begin;
  size_t end;
  uint32_t value;
};

std::vector<CodePoint> decode(std::string_view s) {
  std::vector<CodePoint> out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = valid_length_at(s, i);
    out.push_back({i, i + n, decode_at(s, i, n)});
    i += n;
  }
  return out;
}

}  // namespace

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  for (size_t i = 0; i < s.size(); i += valid_length_at(s, i)) offsets.push_back(i);
  offsets.push_back(s.size());
  return offsets;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += valid_length_at(s, i)) ++n;
  return n;
}

std::string slice(std::string_view s, std::optional<int64_t> start, std::optional<int64_t> stop,
                  std::optional<int64_t> step) {
  const std::vector<size_t> off = code_point_offsets(s);
  const int64_t len = static_cast<int64_t>(off.size()) - 1;
  const int64_t st = step.value_or(1);
  if (st == 0) throw EvalError("slice step cannot be zero");
  const auto clamp = [&](std::optional<int64_t> v, int64_t dflt, int64_t lo, int64_t hi) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x += len;
    return std::clamp(x, lo, hi);
  };
  std::string out;
  if (st > 0) {
    const int64_t a = clamp(start, 0, 0, len);
    const int64_t b = clamp(stop, len, 0, len);
    if (st == 1) return a < b ? std::string(s.substr(off[static_cast<size_t>(a)], off[static_cast<size_t>(b)] - off[static_cast<size_t>(a)])) : "";
    for (int64_t i = a; i < b; i += st) {
      out += s.substr(off[static_cast<size_t>(i)], off[static_cast<size_t>(i) + 1] - off[static_cast<size_t>(i)]);
      if (b - i <= st) break;
    }
  } else {
    const int64_t a = clamp(start, len - 1, -1, len - 1);
    const int64_t b = clamp(stop, -1, -1, len - 1);
    for (int64_t i = a; i > b; i += st) {
      out += s.substr(off[static_cast<size_t>(i)], off[static_cast<size_t>(i) + 1] - off[static_cast<size_t>(i)]);
      if (i - b <= -st) break;
    }
  }
  return out;
}

std::optional<std::string> at(std::string_view s, int64_t index) {
  const std::vector<size_t> off = code_point_offsets(s);
  const int64_t len = static_cast<int64_t>(off.size()) - 1;
  if (index < 0) index += len;
  if (index < 0 || index >= len) return std::nullopt;
  const size_t i = static_cast<size_t>(index);
  return std::string(s.substr(off[i], off[i + 1] - off[i]));
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::vector<CodePoint> cps = decode(s);
  std::vector<uint32_t> set;
  if (chars) {
    for (const auto& cp : decode(*chars)) set.push_back(cp.value);
  }
  const auto strippable = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_unicode_space(cp);
  };
  size_t a = 0;
  size_t b = cps.size();
  if (left) {
    while (a < b && strippable(cps[a].value)) ++a;
  }
  if (right) {
    while (b > a && strippable(cps[b - 1].value)) --b;
  }
  if (a >= b) return "";
  return std::string(s.substr(cps[a].begin, cps[b - 1].end - cps[a].begin));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) throw EvalError("split: empty separator");
    size_t from = 0;
    for (;;) {
      const size_t hit = (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) ? std::string_view::npos
                                                                                       : s.find(*sep, from);
      if (hit == std::string_view::npos) {
        out.emplace_back(s.substr(from));
        return out;
      }
      out.emplace_back(s.substr(from, hit - from));
      from = hit + sep->size();
    }
  }
  const std::vector<CodePoint> cps = decode(s);
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_unicode_space(cps[i].value)) ++i;
    if (i >= cps.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      size_t end = cps.size();
      while (end > i && is_unicode_space(cps[end - 1].value)) --end;
      out.emplace_back(s.substr(cps[i].begin, cps[end - 1].end - cps[i].begin));
      break;
    }
    const size_t start = i;
    while (i < cps.size() && !is_unicode_space(cps[i].value)) ++i;
    out.emplace_back(s.substr(cps[start].begin, cps[i - 1].end - cps[start].begin));
  }
  return out;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count, size_t max_bytes) {
  std::string out;
  size_t pos = 0;
  int64_t done = 0;
  if (from.empty()) {
    // Python inserts `to` before every code point and at the end.
    const std::vector<size_t> off = code_point_offsets(s);
    for (size_t k = 0; k + 1 < off.size(); ++k) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out += s.substr(off[k], off[k + 1] - off[k]);
      if (out.size() > max_bytes) throw EvalError("replace: result too large");
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  while (count < 0 || done < count) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out += s.substr(pos, hit - pos);
    out += to;
    pos = hit + from.size();
    ++done;
    if (out.size() > max_bytes) throw EvalError("replace: result too large");
  }
  out += s.substr(pos);
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out = lower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string title(std::string_view s) {
  std::string out(s);
  bool in_word = false;
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalpha(u) != 0) {
      c = static_cast<char>(in_word ? std::tolower(u) : std::toupper(u));
      in_word = true;
    } else {
      in_word = u >= 0x80 || std::isdigit(u) != 0 ? in_word : false;
    }
  }
  return out;
}

}  // namespace vks::jinja::str
