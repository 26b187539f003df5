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
  // The arguments object as JSON text, keys in the model's order: when the call names its
  // function first (every template's format does), the model's text without the whitespace
  // between tokens (numbers and escapes as written, so streamed fragments join to it); otherwise,
  // and for an arguments string holding an object, that object re-serialized compactly.
  std::string arguments;
  bool streamed = false;  // its arguments went out as fragments (ToolCallFragment) first

  bool operator==(const ToolCall&) const = default;
};

// A piece of a call in progress (ToolCallParser::stream_arguments): the first names the call,
// the others carry the next bytes of its arguments; their arguments together are the finished
// call's `arguments`.
struct ToolCallFragment {
  size_t index = 0;       // the call's index in the answer (calls_seen() when it started)
  std::string name;       // the first fragment only
  std::string arguments;

  bool operator==(const ToolCallFragment&) const = default;
};

struct ToolParse {
  std::string text;             // the answer's text outside calls
  std::vector<ToolCall> calls;  // calls completed by this piece
  std::vector<ToolCallFragment> fragments;  // with stream_arguments: calls in progress

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
  // Report a call's arguments as they arrive (fragments), once its name is known and its
  // arguments object has begun (formats that write the name first); its whole ToolCall still
  // comes when its JSON closes, marked streamed. A call whose fragments went out is a call even
  // if its JSON then fails to parse as one: that can only happen to a call no grammar enforced.
  void stream_arguments(bool on) { stream_arguments_ = on; }
  bool streams_arguments() const { return stream_arguments_; }
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
  void call_byte(char ch, ToolParse& out);
  bool arguments_begin();  // call_ is `{"<name_key>": "<name>", "<args_key>": {`

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
  bool stream_arguments_ = false;
  // The arguments object of the call being read, without whitespace between tokens, once it has
  // begun (args_state_ kIn) and after it closed (kDone).
  enum class Args { kBefore, kIn, kDone, kNone };
  Args args_state_ = Args::kBefore;
  std::string args_;
  std::string call_name_;
};

}  // namespace vks::chat
