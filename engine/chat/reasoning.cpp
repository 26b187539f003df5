#include "engine/chat/reasoning.h"

#include <algorithm>
#include <exception>
#include <utility>

#include <nlohmann/json.hpp>

namespace vks::chat {
namespace {

bool is_blank(char ch) { return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t'; }

// The rendered prompt ends with `open` followed only by whitespace.
bool ends_inside(std::string_view prompt, std::string_view open) {
  while (!prompt.empty() && is_blank(prompt.back())) prompt.remove_suffix(1);
  return prompt.ends_with(open);
}

}  // namespace

ReasoningFormat detect_reasoning_format(const ChatTemplate& tmpl) {
  ReasoningFormat f;
  const std::string& source = tmpl.source();
  // Qwen3, QwQ, DeepSeek-R1 and their derivatives all write these two literals; a template that
  // never writes them has no reasoning block to find.
  if (source.find("<think>") == std::string::npos || source.find("</think>") == std::string::npos) return f;
  f.open = "<think>";
  f.close = "</think>";
  f.has_switch = source.find("enable_thinking") != std::string::npos;
  try {
    const nlohmann::ordered_json messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "Hi"}}});
    const nlohmann::ordered_json extra = {{"enable_thinking", true}};
    f.starts_inside = ends_inside(tmpl.render_json(messages, /*add_generation_prompt=*/true, extra), f.open);
  } catch (const std::exception&) {
    f.starts_inside = false;  // the template refused the probe: assume the model opens the block
  }
  return f;
}

std::optional<ReasoningParser> answer_reasoning_parser(ReasoningFormat format, std::optional<bool> enable_thinking) {
  if (!format.thinks()) return std::nullopt;
  if (format.has_switch && enable_thinking == false) format.starts_inside = false;
  return ReasoningParser(std::move(format));
}

ReasoningParser::ReasoningParser(ReasoningFormat format)
    : format_(std::move(format)), state_(format_.starts_inside ? State::kInside : State::kStart) {
  if (!format_.thinks()) state_ = State::kContent;
  thought_ = state_ == State::kInside;
}

void ReasoningParser::feed(std::string_view piece, ReasoningSplit& out) {
  if (state_ == State::kContent && held_.empty()) {  // the common case after the block: no scanning
    out.content.append(piece);
    return;
  }
  for (char ch : piece) step(ch, out);
}

void ReasoningParser::step(char ch, ReasoningSplit& out) {
  switch (state_) {
    case State::kStart: {
      // Whitespace, then `open` or anything else. held_ = the whitespace + a prefix of open.
      const size_t ws = held_.find_first_not_of(" \n\r\t");
      const size_t matched = ws == std::string::npos ? 0 : held_.size() - ws;
      if (matched == 0 && is_blank(ch)) {
        held_ += ch;
        return;
      }
      if (format_.open[matched] == ch) {
        held_ += ch;
        if (matched + 1 == format_.open.size()) {  // the block opens: the whitespace before it goes
          held_.clear();
          state_ = State::kInside;
          thought_ = true;
        }
        return;
      }
      // Not a reasoning block: all of it is content, from here on.
      out.content += held_;
      out.content += ch;
      held_.clear();
      state_ = State::kContent;
      return;
    }
    case State::kInside: {
      held_ += ch;
      // Keep the longest suffix of held_ that is a prefix of close; what precedes it is reasoning.
      if (held_ == format_.close) {
        held_.clear();
        state_ = State::kAfterClose;
        return;
      }
      size_t keep = std::min(held_.size(), format_.close.size() - 1);
      while (keep > 0 && std::string_view(held_).substr(held_.size() - keep) != std::string_view(format_.close).substr(0, keep)) {
        --keep;
      }
      out.reasoning.append(held_, 0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return;
    }
    case State::kAfterClose:
      // The whitespace between the block and the answer ("</think>\n\n") belongs to neither.
      if (is_blank(ch)) return;
      state_ = State::kContent;
      out.content += ch;
      return;
    case State::kContent:
      out.content += ch;
      return;
  }
}

void ReasoningParser::finish(ReasoningSplit& out) {
  if (state_ == State::kInside) {
    out.reasoning += held_;  // cut inside the block (or a partial close marker): still reasoning
  } else if (state_ == State::kStart) {
    out.content += held_;    // whitespace or a partial open marker: the answer's text
  }
  held_.clear();
  state_ = State::kContent;
}

}  // namespace vks::chat
