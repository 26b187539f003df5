#include "engine/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <initializer_list>

#include "engine/common/error.h"

namespace vks {
namespace {

// llama.cpp's regexes for each pre-tokenizer (llama-vocab.cpp). Where llama.cpp rewrote the
// tokenizer.json regex ((?i:'s|...) became explicit [sS] classes) we use its rewrite, so that
// caseless matching cannot pick up Unicode case-folding partners such as U+017F.
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kDigit = R"(\p{N})";
constexpr std::string_view kDefaultPunct = R"([\p{P}\$\+<=>\^~\|]+)";
constexpr std::string_view kDigits = R"(\p{N}+)";
constexpr std::string_view kThreeDigits = R"([0-9][0-9][0-9])";
// Mistral's tekken regex as in its tokenizer.json (PCRE2 has the \p{Lu} etc. classes llama.cpp's
// engine lacks, so no rewrite is needed).
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreSpec {
  std::initializer_list<std::string_view> names;
  std::initializer_list<std::string_view> regexes;
  bool ignore_merges;
  bool add_bos;
};

const PreSpec kSpecs[] = {
    {{"llama-bpe", "llama3", "llama-v3"}, {kLlama3}, true, true},
    {{"qwen2", "deepseek-r1-qwen"}, {kQwen2}, false, false},
    {{"smollm"}, {kDigit, kGpt2}, false, false},
    {{"gpt-2", "phi-2"}, {kGpt2}, false, false},
    {{"default", ""}, {kDefaultPunct, kGpt2, kDigits, kThreeDigits}, false, false},
    {{"tekken"}, {kTekken}, true, true},
};

// Unicode's White_Space (which \s means in the Hugging Face and llama.cpp engines) includes
// U+0085 NEXT LINE; PCRE2's \s does not, so it is added to every \s and \S.
std::string with_next_line_as_space(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char n = pattern[++i];
      if (n == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (n == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else {
        out += c;
        out += n;
      }
      continue;
    }
    if (c == '[') in_class = true;
    if (c == ']') in_class = false;
    out += c;
  }
  return out;
}

int utf8_lead_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c < 0xE0) return 2;
  if (c < 0xF0) return 3;
  return 4;
}

// Per-thread match state shared by every pattern: an ovector of one pair is all split() reads, and
// a large JIT stack is made only if a match ever exhausts the default one.
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* big_stack_context = nullptr;
  pcre2_jit_stack* big_stack = nullptr;
  MatchScratch() = default;
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;
  ~MatchScratch() {
    pcre2_match_context_free(big_stack_context);
    pcre2_jit_stack_free(big_stack);
    pcre2_match_data_free(data);
  }
  pcre2_match_context* big_stack_ctx() {
    if (big_stack_context == nullptr) {
      big_stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
      big_stack_context = pcre2_match_context_create(nullptr);
      if (big_stack != nullptr && big_stack_context != nullptr) {
        pcre2_jit_stack_assign(big_stack_context, nullptr, big_stack);
      }
    }
    return big_stack_context;
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  std::string pattern;
  Regex() = default;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex() { pcre2_code_free(code); }

  // Appends the matches of this regex in `piece`, and the text between them, to `out`.
  void split_into(std::string_view piece, std::vector<std::string_view>& out) const {
    MatchScratch& s = scratch();
    if (s.data == nullptr) throw Error(ErrorCode::kOutOfMemory, "pre-tokenizer: out of memory for PCRE2 match data");
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
    size_t gap_start = 0;
    size_t pos = 0;
    while (pos < piece.size()) {
      int rc = pcre2_match(code, subject, piece.size(), pos, PCRE2_NO_UTF_CHECK, s.data, nullptr);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code, subject, piece.size(), pos, PCRE2_NO_UTF_CHECK, s.data, s.big_stack_ctx());
      }
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof(message));
        throw Error(ErrorCode::kInternal, "pre-tokenizer regex failed on a " + std::to_string(piece.size()) +
                                              "-byte text: " + reinterpret_cast<const char*>(message));
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
      const size_t begin = ov[0];
      const size_t end = ov[1];
      if (end <= begin) {  // an empty match: none of our patterns can make one, but never loop
        pos = begin + static_cast<size_t>(utf8_lead_length(static_cast<unsigned char>(piece[begin])));
        continue;
      }
      if (begin > gap_start) out.push_back(piece.substr(gap_start, begin - gap_start));
      out.push_back(piece.substr(begin, end - begin));
      gap_start = pos = end;
    }
    if (gap_start < piece.size()) out.push_back(piece.substr(gap_start));
  }
};

PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

bool PreTokenizer::default_add_bos(std::string_view pre) {
  for (const PreSpec& spec : kSpecs) {
    for (const std::string_view name : spec.names) {
      if (name == pre) return spec.add_bos;
    }
  }
  return false;
}

std::string PreTokenizer::supported_names() {
  std::string names;
  for (const PreSpec& spec : kSpecs) {
    for (const std::string_view name : spec.names) {
      if (name.empty()) continue;
      if (!names.empty()) names += ", ";
      names += name;
    }
  }
  return names;
}

PreTokenizer PreTokenizer::for_name(std::string_view pre) {
  for (const PreSpec& spec : kSpecs) {
    bool found = false;
    for (const std::string_view name : spec.names) found = found || name == pre;
    if (!found) continue;
    PreTokenizer p;
    p.ignore_merges_ = spec.ignore_merges;
    p.add_bos_ = spec.add_bos;
    for (const std::string_view source : spec.regexes) {
      auto regex = std::make_unique<Regex>();
      regex->pattern = with_next_line_as_space(source);
      int error = 0;
      PCRE2_SIZE error_offset = 0;
      regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex->pattern.data()), regex->pattern.size(),
                                  PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
      if (regex->code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof(message));
        throw Error(ErrorCode::kInternal, "pre-tokenizer '" + std::string(pre) + "': regex does not compile at offset " +
                                              std::to_string(error_offset) + ": " +
                                              reinterpret_cast<const char*>(message));
      }
      pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);  // optional: the interpreter is the fallback
      p.regexes_.push_back(std::move(regex));
    }
    return p;
  }
  throw Error(ErrorCode::kUnsupported, "tokenizer.ggml.pre '" + std::string(pre) +
                                           "' is not a supported BPE pre-tokenizer (supported: " +
                                           supported_names() + ")");
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  std::vector<std::string_view> next;
  for (const auto& regex : regexes_) {
    next.clear();
    next.reserve(pieces.size() * 2);
    for (const std::string_view piece : pieces) regex->split_into(piece, next);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace vks
