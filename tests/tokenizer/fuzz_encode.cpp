// libFuzzer target for the tokenizer: any bytes (invalid UTF-8 included) must encode without a
// crash into ids inside the vocabulary, valid text must round-trip through decode, and streamed
// detokenization must equal decode.
// The first byte picks the options; the rest is the text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/common/test_models.h"

namespace {

struct FuzzVocab {
  vks::gguf::GgufFile file;
  std::unique_ptr<vks::Tokenizer> tok;
  explicit FuzzVocab(const std::string& path) : file(vks::gguf::GgufFile::open(path)), tok(vks::Tokenizer::from_gguf(file)) {}
};

const vks::Tokenizer& fuzz_tokenizer() {
  static const FuzzVocab vocab(vks::test::model_path("llama2-vocab.gguf"));  // loaded once, read-only
  return *vocab.tok;
}

[[noreturn]] void fail(const char* what, std::string_view text) {
  std::fprintf(stderr, "tokenizer fuzz: %s for input (hex):", what);
  for (const char c : text) std::fprintf(stderr, " %02x", static_cast<unsigned char>(c));
  std::fprintf(stderr, "\n");
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const vks::Tokenizer& tok = fuzz_tokenizer();
  const bool add_bos = (data[0] & 1) != 0;
  const bool parse_special = (data[0] & 2) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::vector<vks::TokenId> ids = tok.encode(text, add_bos, parse_special);
  for (const vks::TokenId id : ids) {
    if (id < 0 || id >= tok.vocab_size()) fail("token id out of range", text);
  }
  // The round trip holds for valid UTF-8 without U+2581 (which decodes to a space) when no control
  // token was parsed (they decode to nothing). Invalid UTF-8 can swallow the bytes of an escaped
  // space into a broken character, exactly as in llama.cpp, so it is only checked not to crash.
  const bool round_trips = !parse_special && vks::utf8_sanitize(text) == text && text.find("\xE2\x96\x81") == std::string_view::npos;
  if (round_trips && tok.decode(ids) != text) fail("decode(encode(text)) != text", text);
  vks::IncrementalDetokenizer detok(tok);
  std::string streamed;
  for (const vks::TokenId id : ids) streamed += detok.push(id);
  streamed += detok.flush();
  if (streamed != tok.decode(ids)) fail("streamed pieces != decode", text);
  return 0;
}
