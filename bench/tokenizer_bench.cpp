// Tokenizer throughput on ~1 MB of English and ~1 MB of mixed-script text (both generated here,
// deterministically), and vocabulary load time, for the SentencePiece (llama2-vocab.gguf) and the
// byte-level BPE (llama3-vocab.gguf, qwen2-vocab.gguf) vocabularies.
//   tokenizer_bench [--models DIR] [--mb 1] [--reps 3] [--only qwen2] [--write-texts DIR]
// Prints one line per vocabulary and text: load ms, encode MB/s, tokens, decode MB/s (medians).
// --write-texts also saves the texts (DIR/english.txt, DIR/mixed.txt) and each vocabulary's ids of
// them (DIR/llama3-vocab.english.ids: space-separated, no BOS) for comparing with other tokenizers
// (tools/llama_cpp_refs/tokenizer_throughput.mjs runs llama.cpp's on the same files).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Sentences of common English words, punctuation, numbers and paragraph breaks.
std::string english_text(size_t bytes) {
  static const char* const kWords[] = {
      "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
      "not", "he", "I", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they",
      "you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when",
      "will", "would", "who", "so", "no", "model", "tokenizer", "inference", "language", "information",
      "understanding", "development", "government", "particularly", "don't", "it's", "we'll", "they're"};
  static const char* const kPunct[] = {",", ",", ";", " -", ":"};
  std::mt19937 rng(42);
  std::string out;
  out.reserve(bytes + 64);
  while (out.size() < bytes) {
    const int words = 6 + static_cast<int>(rng() % 14);
    for (int w = 0; w < words; ++w) {
      std::string word = kWords[rng() % std::size(kWords)];
      if (w == 0) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
      if (rng() % 40 == 0) word = std::to_string(rng() % 100000);
      out += word;
      if (w + 1 < words) out += rng() % 9 == 0 ? std::string(kPunct[rng() % std::size(kPunct)]) + " " : " ";
    }
    out += rng() % 5 == 0 ? "?" : ".";
    out += rng() % 7 == 0 ? "\n\n" : " ";
  }
  return out;
}

// Words of many scripts (Latin, Cyrillic, Greek, CJK, Japanese kana, Arabic, Devanagari, Hangul),
// emoji, code and numbers, mixed in random order.
std::string mixed_text(size_t bytes) {
  static const char* const kWords[] = {
      "hello", "world", "\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82", "\xD0\xBC\xD0\xB8\xD1\x80",
      "\xCE\xBA\xCE\xB1\xCE\xBB\xCE\xB7\xCE\xBC\xCE\xAD\xCF\x81\xCE\xB1", "\xE4\xBD\xA0\xE5\xA5\xBD",
      "\xE4\xB8\x96\xE7\x95\x8C", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF",
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7", "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
      "\xEC\x95\x88\xEB\x85\x95\xED\x95\x98\xEC\x84\xB8\xEC\x9A\x94", "\xF0\x9F\xA6\x99", "\xF0\x9F\x98\x80\xF0\x9F\x8E\x89",
      "int main() { return 0; }", "x += 1;", "3.14159", "2024-11-25", "caf\xC3\xA9", "na\xC3\xAFve", "\xC3\x9F",
      "\t", "\n"};
  std::mt19937 rng(7);
  std::string out;
  out.reserve(bytes + 64);
  while (out.size() < bytes) {
    out += kWords[rng() % std::size(kWords)];
    out += rng() % 6 == 0 ? ", " : " ";
  }
  return out;
}

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary);
  out << contents;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string ids_line(const std::vector<vks::TokenId>& ids) {
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line.push_back(' ');
    line.append(std::to_string(ids[i]));
  }
  line.push_back('\n');
  return line;
}

struct Row {
  double load_ms = 0;
  double encode_mb_s = 0;
  size_t tokens = 0;
  double decode_mb_s = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string models = std::getenv("VKSTREAM_MODELS") ? std::getenv("VKSTREAM_MODELS") : "../shared/models";
  double mb = 1.0;
  int reps = 3;
  std::string only;
  std::string write_dir;
  CLI::App app{"tokenizer throughput and load time"};
  app.add_option("--models", models, "folder with llama2-vocab.gguf, llama3-vocab.gguf, qwen2-vocab.gguf");
  app.add_option("--mb", mb, "megabytes of each text")->check(CLI::Range(0.001, 64.0));
  app.add_option("--reps", reps, "repetitions (medians are printed)")->check(CLI::Range(1, 100));
  app.add_option("--only", only, "run only the vocabularies whose name contains this");
  app.add_option("--write-texts", write_dir, "also write the texts and each vocabulary's token ids to this folder")
      ->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);

  const size_t bytes = static_cast<size_t>(mb * 1024 * 1024);
  const std::vector<std::pair<const char*, std::string>> texts = {{"english", english_text(bytes)},
                                                                   {"mixed", mixed_text(bytes)}};
  const std::vector<std::pair<const char*, const char*>> vocabs = {
      {"spm llama2", "llama2-vocab.gguf"}, {"bpe llama3", "llama3-vocab.gguf"}, {"bpe qwen2", "qwen2-vocab.gguf"}};
  if (!write_dir.empty()) {
    for (const auto& [text_name, text] : texts) write_file(write_dir + "/" + text_name + ".txt", text);
  }

  std::printf("%-11s %-8s %10s %12s %10s %12s\n", "vocab", "text", "load ms", "encode MB/s", "tokens", "decode MB/s");
  for (const auto& [name, file] : vocabs) {
    if (std::string(name).find(only) == std::string::npos) continue;
    try {
      std::vector<double> loads;
      std::unique_ptr<vks::gguf::GgufFile> gguf;
      std::unique_ptr<vks::Tokenizer> tok;
      for (int r = 0; r < reps; ++r) {
        tok.reset();
        const Clock::time_point t0 = Clock::now();
        gguf = std::make_unique<vks::gguf::GgufFile>(vks::gguf::GgufFile::open(models + "/" + file));
        tok = vks::Tokenizer::from_gguf(*gguf);
        loads.push_back(seconds_since(t0) * 1e3);
      }
      for (const auto& [text_name, text] : texts) {
        std::vector<double> enc, dec;
        std::vector<vks::TokenId> ids;
        for (int r = 0; r < reps; ++r) {
          Clock::time_point t0 = Clock::now();
          ids = tok->encode(text, false);
          enc.push_back(static_cast<double>(text.size()) / 1e6 / seconds_since(t0));
          t0 = Clock::now();
          const std::string back = tok->decode(ids);
          dec.push_back(static_cast<double>(back.size()) / 1e6 / seconds_since(t0));
          if (back != text) std::fprintf(stderr, "warning: %s does not round-trip the %s text\n", name, text_name);
        }
        std::printf("%-11s %-8s %10.1f %12.2f %10zu %12.1f\n", name, text_name, median(loads), median(enc), ids.size(),
                    median(dec));
        if (!write_dir.empty()) {
          const std::string stem = std::string(file).substr(0, std::string(file).rfind(".gguf"));
          write_file(write_dir + "/" + stem + "." + text_name + ".ids", ids_line(ids));
        }
      }
    } catch (const std::exception& e) {
      std::printf("%-11s skipped: %s\n", name, e.what());
    }
  }
  return 0;
}
