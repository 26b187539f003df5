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

void ToolCallParser::give_back(ToolParse& out) {
  std::string raw = std::move(raw_);
  raw_.clear();
  call_.clear();
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
  if (!to_call(call_, format_, call)) return give_back(out);
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
    case State::kCall:
      raw_.push_back(ch);
      call_.push_back(ch);
      if (call_.size() > kMaxCallBytes) return give_back(out);
      if (scanner_.step(ch)) call_complete(out);
      return;
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
  close_held_.clear();
  ws_after_.clear();  // whitespace after the last call
  state_ = format_.open.empty() ? State::kPlain : State::kText;
}

}  // namespace vks::chat
