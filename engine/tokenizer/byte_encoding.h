#pragma once
// GPT-2's byte-level alphabet (bytes_to_unicode in OpenAI's encoder.py, used by every byte-level
// BPE vocabulary): each of the 256 bytes is written as one printable Unicode character, so that
// vocabulary strings never hold raw spaces, control bytes or partial UTF-8.
#include <string>
#include <string_view>

namespace vks {

// Appends the byte-level spelling of `bytes` (1-2 UTF-8 bytes per input byte) to `out`.
void byte_encode_append(std::string_view bytes, std::string& out);

// The raw bytes a byte-level vocabulary string stands for. A character outside the alphabet
// (possible only in a malformed vocabulary) is kept as its own UTF-8.
std::string byte_decode(std::string_view encoded);

}  // namespace vks
