// Streaming detokenization: pieces are never half a UTF-8 character and concatenate to decode().
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/common/test_models.h"

namespace vks {
namespace {

// Strict UTF-8 check, written independently of engine/tokenizer/utf8.cpp.
bool is_valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0;
    size_t n = 0;
    if (c < 0x80) {
      cp = c;
      n = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      n = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      n = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      n = 4;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

class Detokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = std::make_unique<gguf::GgufFile>(gguf::GgufFile::open(test::model_path("llama2-vocab.gguf")));
    tok_ = Tokenizer::from_gguf(*file_);
  }
  // Pushes every id, checking each piece, and returns the concatenation.
  std::string stream(const std::vector<TokenId>& ids, bool at_start = true) {
    IncrementalDetokenizer d(*tok_, at_start);
    std::string all;
    for (const TokenId id : ids) {
      const std::string piece = d.push(id);
      EXPECT_TRUE(is_valid_utf8(piece)) << "piece is not valid UTF-8 after id " << id;
      all += piece;
    }
    const std::string tail = d.flush();
    EXPECT_TRUE(is_valid_utf8(tail));
    return all + tail;
  }
  static TokenId byte_token(int b) { return 3 + b; }  // <0x00> is id 3 in the Llama 2 vocabulary
  std::unique_ptr<gguf::GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(Detokenizer, HoldsBackPartialCharacters) {
  // U+1F999 🦙 = F0 9F A6 99 as four byte tokens.
  IncrementalDetokenizer d(*tok_);
  EXPECT_EQ(d.push(15043), "Hello");
  EXPECT_EQ(d.push(byte_token(0xF0)), "");
  EXPECT_EQ(d.push(byte_token(0x9F)), "");
  EXPECT_EQ(d.push(byte_token(0xA6)), "");
  EXPECT_EQ(d.push(byte_token(0x99)), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(d.push(byte_token(0xE2)), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");  // an incomplete character at the end
}

TEST_F(Detokenizer, InvalidBytesBecomeReplacementCharacters) {
  IncrementalDetokenizer d(*tok_);
  EXPECT_EQ(d.push(byte_token(0x80)), "\xEF\xBF\xBD");  // a lone continuation byte
  EXPECT_EQ(d.push(byte_token(0xE2)), "");
  EXPECT_EQ(d.push(byte_token(0x41)), "\xEF\xBF\xBD" "A");  // broken sequence, then 'A'
  EXPECT_EQ(d.flush(), "");
  const std::vector<TokenId> ids = {byte_token(0x80), byte_token(0xE2), byte_token(0x41)};
  EXPECT_EQ(tok_->decode(ids), "\xEF\xBF\xBD\xEF\xBF\xBD" "A");
}

TEST_F(Detokenizer, LeadingSpaceRule) {
  const std::vector<TokenId> ids = {1, 15043, 3186};  // <s> ▁Hello ▁world
  EXPECT_EQ(tok_->decode(ids), "Hello world");
  EXPECT_EQ(stream(ids), "Hello world");
  // Continuing text (only generated ids pushed): the first piece keeps its space.
  EXPECT_EQ(stream({3186}, /*at_start=*/false), " world");
  EXPECT_EQ(stream({3186}, /*at_start=*/true), "world");
}

TEST_F(Detokenizer, ContinuationAfterPromptMatchesWholeDecode) {
  // How the engine streams: the prompt is not pushed, the generated ids continue its text.
  const std::vector<TokenId> all = tok_->encode("Hello world, how are you? \xF0\x9F\xA6\x99 fine.", true);
  ASSERT_GT(all.size(), 6u);
  for (size_t split = 2; split < all.size(); ++split) {
    const std::vector<TokenId> prompt(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(split));
    const std::vector<TokenId> generated(all.begin() + static_cast<std::ptrdiff_t>(split), all.end());
    const std::string prompt_text = tok_->decode(prompt);
    if (prompt_text.find("\xEF\xBF\xBD") != std::string::npos) continue;  // split inside 🦙's bytes
    EXPECT_EQ(prompt_text + stream(generated, /*at_start=*/false), tok_->decode(all)) << "split " << split;
  }
}

TEST_F(Detokenizer, RandomSequencesConcatenateToDecode) {
  std::mt19937 rng(1234);
  const int vocab = tok_->vocab_size();
  // Ids from the whole vocabulary, with byte tokens and control tokens over-represented.
  std::uniform_int_distribution<int> any(-2, vocab + 2);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_int_distribution<int> length(0, 40);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<TokenId> ids;
    const int n = length(rng);
    for (int i = 0; i < n; ++i) {
      const int k = kind(rng);
      if (k < 4) {
        ids.push_back(byte_token(byte(rng)));
      } else if (k == 4) {
        // Bytes of a valid multi-byte character, so complete characters form from pieces.
        const char* chars[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x9A\x80", "\xD0\xBD"};
        for (const char* c = chars[byte(rng) % 4]; *c != 0; ++c) ids.push_back(byte_token(static_cast<unsigned char>(*c)));
      } else if (k == 5) {
        ids.push_back(byte(rng) % 3);  // <unk>, <s>, </s>
      } else {
        ids.push_back(any(rng));
      }
    }
    const std::string decoded = tok_->decode(ids);
    ASSERT_TRUE(is_valid_utf8(decoded)) << "trial " << trial;
    ASSERT_EQ(stream(ids), decoded) << "trial " << trial;
  }
}

TEST(Utf8, StreamMatchesWholeStringOnRandomBytes) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 24);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string bytes;
    const int n = length(rng);
    for (int i = 0; i < n; ++i) {
      // Bias towards bytes >= 0x80 so multi-byte forms, good and bad, are common.
      const int b = byte(rng);
      bytes.push_back(static_cast<char>(b < 64 ? b : 0x80 | (b & 0x7F)));
    }
    const std::string whole = utf8_sanitize(bytes);
    ASSERT_TRUE(is_valid_utf8(whole));
    if (is_valid_utf8(bytes)) {
      ASSERT_EQ(whole, bytes);
    }
    Utf8Stream stream;
    std::string streamed;
    for (const char c : bytes) stream.feed(std::string_view(&c, 1), streamed);
    stream.finish(streamed);
    ASSERT_EQ(streamed, whole) << "trial " << trial;
  }
}

TEST(Utf8, RejectsOverlongSurrogatesAndOutOfRange) {
  EXPECT_EQ(utf8_sanitize("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_sanitize("\xE0\x80\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_sanitize("\xF4\x90\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_sanitize("\xF0\x9F\x9A"), "\xEF\xBF\xBD");  // one maximal subpart
  EXPECT_EQ(utf8_sanitize("a\xF0\x9F\x9A\x80z"), "a\xF0\x9F\x9A\x80z");
}

// The textbook encoder (RFC 3629), the reference for utf8_decode.
std::string encode_utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

TEST(Utf8, DecodesEveryScalarValueAndRefusesIllFormedCharacters) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;  // surrogates are not characters
    const std::string s = "x" + encode_utf8(cp);
    size_t pos = 1;
    uint32_t got = 0;
    ASSERT_TRUE(utf8_decode(s, pos, got)) << std::hex << cp;
    ASSERT_EQ(got, cp);
    ASSERT_EQ(pos, s.size()) << std::hex << cp;
  }
  // Overlong, surrogate, beyond U+10FFFF, a lone continuation, cut short, at the end.
  for (const std::string bad : {"\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80",
                                "\x80", "\xE2\x82", "\xF0\x9F\x9A", ""}) {
    size_t pos = 0;
    uint32_t got = 7;
    EXPECT_FALSE(utf8_decode(bad, pos, got)) << testing::PrintToString(bad);
    EXPECT_EQ(pos, 0u);
    EXPECT_EQ(got, 7u);
  }
}

}  // namespace
}  // namespace vks
