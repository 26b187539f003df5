#pragma once
// Text as llama.cpp reads it before BPE pre-tokenization (unicode_cpts_from_utf8).
#include <string>
#include <string_view>

namespace vks {

// Makes arbitrary bytes valid UTF-8 the way llama.cpp reads text: a byte that does not start a
// well-formed sequence becomes U+FFFD; overlong forms decode to their code point. (Surrogates and
// code points above U+10FFFF, which llama.cpp passes through, also become U+FFFD here.)
// Returns false and leaves `out` untouched when `text` is already valid.
bool sanitize_utf8_like_llama(std::string_view text, std::string& out);

}  // namespace vks
