#pragma once
// Finds where a JSON object or array ends, one byte at a time (strings and escapes respected), so
// text arriving in pieces can be cut at the end of a value without parsing it twice.
#include <cstdint>

namespace vks::chat {

class JsonScanner {
 public:
  // Feeds one byte of a value that starts with '{' or '['; true when this byte closed it.
  bool step(char ch) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (ch == '\\') {
        escaped_ = true;
      } else if (ch == '"') {
        in_string_ = false;
      }
      return false;
    }
    if (ch == '"') {
      in_string_ = true;
    } else if (ch == '{' || ch == '[') {
      ++depth_;
    } else if (ch == '}' || ch == ']') {
      return --depth_ == 0;
    }
    return false;
  }
  void reset() { *this = JsonScanner(); }
  int32_t depth() const { return depth_; }
  bool in_string() const { return in_string_; }

 private:
  int32_t depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace vks::chat
