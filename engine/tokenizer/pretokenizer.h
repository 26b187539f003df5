#pragma once
// The regex pre-tokenizers of byte-level BPE vocabularies, chosen by tokenizer.ggml.pre as in
// llama.cpp: each regex splits every piece the previous one produced, keeping both the matches and
// the text between them. Regexes run on PCRE2 (UTF + Unicode properties), compiled once per
// vocabulary (JIT when available); a compiled PreTokenizer is immutable and thread-safe.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vks {

class PreTokenizer {
 public:
  // Throws vks::Error(kUnsupported) naming `pre` when it is not a known pre-tokenizer.
  static PreTokenizer for_name(std::string_view pre);
  // Whether llama.cpp adds BOS by default for this pre-tokenizer name (false for unknown names).
  static bool default_add_bos(std::string_view pre);
  // The names for_name accepts (for messages and docs).
  static std::string supported_names();
  // Whether llama.cpp emits a pre-token that is itself a vocabulary entry whole (ignore_merges)
  // and adds BOS by default for this pre-tokenizer.
  bool ignore_merges() const { return ignore_merges_; }
  bool add_bos_default() const { return add_bos_; }

  // Splits valid UTF-8 `text` (callers sanitize first) into non-empty pieces viewing `text`.
  // Throws vks::Error(kInternal) if the regex engine fails (e.g. a resource limit).
  std::vector<std::string_view> split(std::string_view text) const;

  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

 private:
  struct Regex;
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Regex>> regexes_;
  bool ignore_merges_ = false;
  bool add_bos_ = false;
};

}  // namespace vks
