#include "engine/chat/tool_call_parser.h"

#include <nlohmann/json.hpp>

namespace vks::chat {
namespace {

using ojson = nlohmann::ordered_json;

bool is_space(char ch) { return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r'; }

std::string compact(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

// {name_key: "f", args_key: {...}} -> the call; an arguments string holding a JSON object is
// accepted too (some models write it the OpenAI way).
bool to_call(const std::string& text, const ToolCallFormat& format, ToolCall& call) {
  const ojson object = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object()) return false;
  const auto name = object.find(format.name_key);
  if (name == object.end() || !name->is_string() || name->get<std::string>().empty()) return false;
  call.name = name->get<std::string>();
  const auto args = object.find(format.args_key);
  if (args == object.end() || args->is_null()) {
    call.arguments = "{}";
  } else if (args->is_object()) {
    call.arguments = compact(*args);
  } else if (args->is_string()) {
    const ojson inner = ojson::parse(args->get<std::string>(), nullptr, false);
    if (inner.is_discarded() || !inner.is_object()) return false;
    call.arguments = compact(inner);
  } else {
    return false;
  }
  return true;
}

}  // namespace

ToolCallParser::ToolCallParser(ToolCallFormat format)
    : format_(std::move(format)), state_(format_.open.empty() ? State::kStart : State::kText) {}

void ToolCallParser::feed(std::string_view piece, ToolParse& out) {
  for (char ch : piece) step(ch, out);
}

void ToolCallParser::emit_text(char ch, ToolParse& out) {
  if (calls_seen_ > 0 && ws_after_.size() < kMaxCallBytes && (is_space(ch) || !ws_after_.empty())) {
    // Whitespace right after a call waits: it is dropped when another call or the end follows.
    if (is_space(ch)) {
      ws_after_.push_back(ch);
      return;
    }
    out.text += ws_after_;
    ws_after_.clear();
  }
  out.text.push_back(ch);
}

void ToolCallParser::emit_text(std::string_view s, ToolParse& out) {
  for (char ch : s) emit_text(ch, out);
}

namespace {

// A JSON string token starting at s[at] ('"'): its end (one past the closing quote), or npos.
size_t string_end(std::string_view s, size_t at) {
  if (at >= s.size() || s[at] != '"') return std::string_view::npos;
  for (size_t i = at + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// `"key"` (appended piecewise: GCC 12 reports a false -Wrestrict on "\"" + key, bug 105329).
std::string json_key_token(const std::string& key) {
  std::string out(1, '"');
  out += key;
  out += '"';
  return out;
}

size_t skip_space(std::string_view s, size_t at) {
  while (at < s.size() && is_space(s[at])) ++at;
  return at;
}

}  // namespace

bool ToolCallParser::arguments_begin() {
  // call_ = `{` name-key `:` name-string `,` args-key `:` `{`, with whitespace between tokens.
  const std::string_view s = call_;
  const std::string name_key = json_key_token(format_.name_key);
  const std::string args_key = json_key_token(format_.args_key);
  size_t at = skip_space(s, 1);
  if (s.substr(at, name_key.size()) != name_key) return false;
  at = skip_space(s, at + name_key.size());
  if (at >= s.size() || s[at] != ':') return false;
  at = skip_space(s, at + 1);
  const size_t name_end = string_end(s, at);
  if (name_end == std::string_view::npos) return false;
  const ojson name = ojson::parse(s.substr(at, name_end - at), nullptr, /*allow_exceptions=*/false);
  if (!name.is_string() || name.get<std::string>().empty()) return false;
  at = skip_space(s, name_end);
  if (at >= s.size() || s[at] != ',') return false;
  at = skip_space(s, at + 1);
  if (s.substr(at, args_key.size()) != args_key) return false;
  at = skip_space(s, at + args_key.size());
  if (at >= s.size() || s[at] != ':') return false;
  if (skip_space(s, at + 1) != s.size() - 1) return false;
  call_name_ = name.get<std::string>();
  return true;
}

void ToolCallParser::call_byte(char ch, ToolParse& out) {
  switch (args_state_) {
    case Args::kBefore:
      // Decided where the first nested value opens: it is the arguments object, or no fragments.
      if (scanner_.depth() < 2) return;
      args_state_ = ch == '{' && arguments_begin() ? Args::kIn : Args::kNone;
      if (args_state_ == Args::kNone) return;
      args_.assign(1, '{');
      if (stream_arguments_) out.fragments.push_back({calls_seen_, call_name_, std::string(1, '{')});
      return;
    case Args::kIn:
      if (is_space(ch) && !scanner_.in_string()) return;  // between tokens
      if (scanner_.depth() == 1) args_state_ = Args::kDone;  // this byte closed the arguments
      args_.push_back(ch);
      if (!stream_arguments_) return;
      if (out.fragments.empty() || out.fragments.back().index != calls_seen_) out.fragments.push_back({calls_seen_, "", ""});
      out.fragments.back().arguments.push_back(ch);
      return;
    case Args::kDone:
    case Args::kNone:
      return;
  }
}

void ToolCallParser::give_back(ToolParse& out) {
  std::string raw = std::move(raw_);
  raw_.clear();
  call_.clear();
  args_state_ = Args::kBefore;
  args_.clear();
  scanner_.reset();
  state_ = format_.open.empty() ? State::kPlain : State::kText;
  emit_text(raw, out);
}

void ToolCallParser::text_char(char ch, ToolParse& out) {
  if (format_.open.empty()) {
    emit_text(ch, out);
    return;
  }
  held_.push_back(ch);
  while (!held_.empty()) {
    if (held_ == format_.open) {
      raw_ = std::move(held_);
      held_.clear();
      state_ = State::kAfterOpen;
      return;
    }
    if (format_.open.starts_with(held_)) return;  // may still become the marker
    emit_text(held_.front(), out);
    held_.erase(0, 1);
  }
}

void ToolCallParser::call_complete(ToolParse& out) {
  ToolCall call;
  call.streamed = stream_arguments_ && (args_state_ == Args::kIn || args_state_ == Args::kDone);
  if (!to_call(call_, format_, call)) {
    if (!call.streamed) return give_back(out);
    call.name = call_name_;  // its fragments went out: it stays a call (see stream_arguments)
  }
  if (args_state_ == Args::kDone) call.arguments = args_;  // as written, whitespace dropped
  args_state_ = Args::kBefore;
  args_.clear();
  ws_after_.clear();
  out.calls.push_back(std::move(call));
  ++calls_seen_;
  call_.clear();
  scanner_.reset();
  if (format_.array) {
    array_comma_ = false;
    state_ = State::kArrayNext;
    return;
  }
  raw_.clear();
  close_held_.clear();
  state_ = State::kClose;
}

void ToolCallParser::step(char ch, ToolParse& out) {
  switch (state_) {
    case State::kStart:  // no open marker: a call is JSON at the very start of the answer
      if (is_space(ch)) {
        held_.push_back(ch);
        return;
      }
      if (ch == (format_.array ? '[' : '{')) {
        raw_ = std::move(held_);
        held_.clear();
        state_ = State::kAfterOpen;
        return step(ch, out);
      }
      state_ = State::kPlain;
      emit_text(held_, out);
      held_.clear();
      return emit_text(ch, out);
    case State::kPlain:
      return emit_text(ch, out);
    case State::kText:
      return text_char(ch, out);
    case State::kAfterOpen:
      raw_.push_back(ch);
      if (is_space(ch)) return;
      if (format_.array && ch == '[') {
        array_comma_ = true;  // the first element needs no comma
        state_ = State::kArrayNext;
        return;
      }
      if (!format_.array && ch == '{') {
        call_.assign(1, ch);
        scanner_.reset();
        scanner_.step(ch);
        state_ = State::kCall;
        return;
      }
      return give_back(out);
    case State::kCall: {
      raw_.push_back(ch);
      call_.push_back(ch);
      if (call_.size() > kMaxCallBytes) return give_back(out);
      const bool closed = scanner_.step(ch);
      call_byte(ch, out);
      if (closed) call_complete(out);
      return;
    }
    case State::kArrayNext:
      raw_.push_back(ch);
      if (is_space(ch)) return;
      if (ch == ',' && !array_comma_) {
        array_comma_ = true;
        return;
      }
      if (ch == '{' && array_comma_) {
        call_.assign(1, ch);
        scanner_.reset();
        scanner_.step(ch);
        state_ = State::kCall;
        return;
      }
      if (ch == ']') {
        raw_.clear();
        close_held_.clear();
        state_ = State::kClose;
        return;
      }
      raw_.clear();  // the calls before stay calls; the rest is text
      state_ = State::kText;
      return text_char(ch, out);
    case State::kClose:
      if (format_.close.empty()) {
        state_ = format_.open.empty() ? State::kPlain : State::kText;
        return step(ch, out);
      }
      if (close_held_.empty() && is_space(ch)) return;
      close_held_.push_back(ch);
      if (close_held_ == format_.close) {
        close_held_.clear();
        state_ = format_.open.empty() ? State::kPlain : State::kText;
        return;
      }
      if (format_.close.starts_with(close_held_)) return;
      {  // no close marker: what was held is text
        std::string held = std::move(close_held_);
        close_held_.clear();
        state_ = format_.open.empty() ? State::kPlain : State::kText;
        for (char c : held) step(c, out);
      }
      return;
  }
}

void ToolCallParser::finish(ToolParse& out) {
  switch (state_) {
    case State::kStart:
      emit_text(held_, out);
      break;
    case State::kText:
      emit_text(held_, out);
      break;
    case State::kAfterOpen:
    case State::kCall:
      emit_text(raw_, out);
      break;
    case State::kPlain:
    case State::kArrayNext:
    case State::kClose:
      break;
  }
  held_.clear();
  raw_.clear();
  call_.clear();
  args_state_ = Args::kBefore;
  args_.clear();
  close_held_.clear();
  ws_after_.clear();  // whitespace after the last call
  state_ = format_.open.empty() ? State::kPlain : State::kText;
}

}  // namespace vks::chat
