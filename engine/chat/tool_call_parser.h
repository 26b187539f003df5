#pragma once
// Splits a model's answer into text and tool calls as it streams in, in the format learnt from
// the chat template (tool_format.h). Incremental and exact: the answer fed in any pieces (one
// byte at a time included) gives the same text and calls as the whole answer at once, because
// every decision is made byte by byte. Text that may be the start of a call marker is held back
// until the next bytes settle it; a call is reported once its JSON closes. Something that looks
// like a call but does not parse as one (`{"name": ..., "arguments": {...}}`, keys as the format
// says) is given back as text, never dropped. Never throws.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/json_scanner.h"
#include "engine/chat/tool_format.h"

namespace vks::chat {

struct ToolCall {
  std::string name;
  std::string arguments;  // the arguments object as compact JSON text, keys in the model's order

  bool operator==(const ToolCall&) const = default;
};

struct ToolParse {
  std::string text;             // the answer's text outside calls
  std::vector<ToolCall> calls;  // calls completed by this piece

  bool operator==(const ToolParse&) const = default;
};

class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat format);

  // Appends what `piece` settles to `out`.
  void feed(std::string_view piece, ToolParse& out);
  // The end of the answer: what is held back (an unfinished call, a partial marker) becomes text.
  void finish(ToolParse& out);

  size_t calls_seen() const { return calls_seen_; }
  const ToolCallFormat& format() const { return format_; }

  // Calls are at most this long (a bigger one is given back as text).
  static constexpr size_t kMaxCallBytes = size_t{1} << 22;

 private:
  enum class State { kStart, kPlain, kText, kAfterOpen, kCall, kArrayNext, kClose };

  void step(char ch, ToolParse& out);
  void text_char(char ch, ToolParse& out);
  void emit_text(char ch, ToolParse& out);
  void emit_text(std::string_view s, ToolParse& out);
  void call_complete(ToolParse& out);
  void give_back(ToolParse& out);  // what was taken for a call turns out not to be one

  ToolCallFormat format_;
  State state_;
  std::string held_;       // kText: a prefix of the open marker; kStart: leading whitespace
  std::string raw_;        // the text consumed since the marker (given back if no call follows)
  std::string call_;       // the JSON of the call being read
  std::string close_held_; // a prefix of the close marker
  std::string ws_after_;   // whitespace after a call, dropped unless text follows
  JsonScanner scanner_;
  bool array_comma_ = false;
  size_t calls_seen_ = 0;
};

}  // namespace vks::chat
