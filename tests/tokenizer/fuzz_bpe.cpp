// libFuzzer target for the byte-level BPE tokenizers (Llama 3 and Qwen2.5 vocabularies): any bytes
// must encode without a crash into ids inside the vocabulary; decoding gives back the input exactly
// (with each byte llama.cpp cannot read as UTF-8 replaced by U+FFFD) unless control tokens were
// parsed; streamed detokenization equals decode and never splits a character.
// The first byte picks the options (bit 0: add BOS, bit 1: parse special, bit 2: vocabulary).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/llama_utf8.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/common/test_models.h"

namespace {

struct FuzzVocab {
  vks::gguf::GgufFile file;
  std::unique_ptr<vks::Tokenizer> tok;
  explicit FuzzVocab(const std::string& path) : file(vks::gguf::GgufFile::open(path)), tok(vks::Tokenizer::from_gguf(file)) {}
};

const vks::Tokenizer& fuzz_tokenizer(bool qwen) {
  // Loaded once, read-only.
  static const FuzzVocab llama3(vks::test::model_path("llama3-vocab.gguf"));
  static const FuzzVocab qwen2(vks::test::model_path("qwen2-vocab.gguf"));
  return qwen ? *qwen2.tok : *llama3.tok;
}

[[noreturn]] void fail(const char* what, std::string_view text) {
  std::fprintf(stderr, "BPE tokenizer fuzz: %s for input (hex):", what);
  for (const char c : text.substr(0, 512)) std::fprintf(stderr, " %02x", static_cast<unsigned char>(c));
  std::fprintf(stderr, "%s\n", text.size() > 512 ? " ..." : "");
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool add_bos = (data[0] & 1) != 0;
  const bool parse_special = (data[0] & 2) != 0;
  const vks::Tokenizer& tok = fuzz_tokenizer((data[0] & 4) != 0);
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::vector<vks::TokenId> ids = tok.encode(text, add_bos, parse_special);
  for (const vks::TokenId id : ids) {
    if (id < 0 || id >= tok.vocab_size()) fail("token id out of range", text);
  }
  const std::string decoded = tok.decode(ids);
  if (!parse_special) {
    std::string expected;
    if (!vks::sanitize_utf8_like_llama(text, expected)) expected = text;
    if (decoded != expected) fail("decode(encode(text)) != text as llama.cpp reads it", text);
  }
  vks::IncrementalDetokenizer detok(tok);
  std::string streamed;
  for (const vks::TokenId id : ids) {
    const std::string piece = detok.push(id);
    if (vks::utf8_sanitize(piece) != piece) fail("a streamed piece is not whole UTF-8", text);
    streamed += piece;
  }
  streamed += detok.flush();
  if (streamed != decoded) fail("streamed pieces != decode", text);
  return 0;
}
