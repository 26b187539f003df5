#pragma once
// Reasoning ("thinking") in a model's answer, as Qwen3 / DeepSeek-R1 style templates write it:
// `<think>...</think>` before the answer. The markers are learnt from the chat template (it must
// write both), and a template whose generation prompt already opens the block (DeepSeek-R1's
// newer ones end the prompt with `<think>\n`) makes the answer start inside it.
//
// ReasoningParser splits the answer into reasoning and content as it streams, as llama.cpp's
// server does with --reasoning-format deepseek: only a block at the very start of the answer
// (after whitespace) is reasoning; text before any `<think>` means the model did not think, and
// everything is content. An answer cut inside the block is all reasoning. Incremental and exact:
// pieces of any size give what the whole answer gives (a possible marker prefix is held back
// until the next bytes settle it). Never throws.
#include <optional>
#include <string>
#include <string_view>

#include "engine/chat/chat_template.h"

namespace vks::chat {

struct ReasoningFormat {
  std::string open;              // "<think>"; empty = the template does not think
  std::string close;             // "</think>"
  bool starts_inside = false;    // the generation prompt opened the block
  bool has_switch = false;       // the template reads enable_thinking

  bool thinks() const { return !open.empty(); }
  bool operator==(const ReasoningFormat&) const = default;
};

// The template's reasoning markers: `<think>`/`</think>` when its source writes both; whether its
// generation prompt (rendered for a probe conversation, enable_thinking true) ends inside the
// block; whether it reads enable_thinking. Never throws (a template refusing the probe gets
// starts_inside false).
ReasoningFormat detect_reasoning_format(const ChatTemplate& tmpl);

struct ReasoningSplit {
  std::string reasoning;
  std::string content;

  bool operator==(const ReasoningSplit&) const = default;
};

class ReasoningParser {
 public:
  explicit ReasoningParser(ReasoningFormat format);

  // Appends what `piece` settles to `out`.
  void feed(std::string_view piece, ReasoningSplit& out);
  // The end of the answer: held-back bytes go where they were heading.
  void finish(ReasoningSplit& out);

  bool thought() const { return thought_; }  // a reasoning block was seen

 private:
  enum class State { kStart, kInside, kAfterClose, kContent };
  void step(char ch, ReasoningSplit& out);

  ReasoningFormat format_;
  State state_;
  std::string held_;  // kStart: leading whitespace and a prefix of `open`; kInside: a prefix of
                      // `close`; kAfterClose: whitespace after the block (dropped)
  bool thought_ = false;
};

// The parser for an answer whose request set `enable_thinking` (nullopt: it did not), or none when
// the template does not think. With enable_thinking false, a template that reads the switch does
// not leave the block open in its generation prompt, so the answer starts outside it; one that
// does not read it (DeepSeek-R1's, which always opens the block) still starts inside.
std::optional<ReasoningParser> answer_reasoning_parser(ReasoningFormat format, std::optional<bool> enable_thinking);

}  // namespace vks::chat
