#include "tools/make_model/synthetic_vocab.h"

#include <cctype>
#include <cstdio>
#include <deque>
#include <unordered_set>
#include <vector>

#include "engine/common/error.h"

namespace vks::tools {
namespace {

// SentencePiece token types as llama.cpp stores them.
constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6;
const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's word-boundary marker

}  // namespace

void add_synthetic_vocab(gguf::GgufWriter& w, uint32_t n) {
  if (n < kMinSyntheticVocab) {
    throw Error(ErrorCode::kInvalidArgument, "a synthetic vocabulary needs at least " + std::to_string(kMinSyntheticVocab) +
                                                 " tokens (3 control + 256 bytes + pieces); got --vocab " + std::to_string(n));
  }
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {kUnknown, kControl, kControl};
  tokens.reserve(n);
  types.reserve(n);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    tokens.emplace_back(name);
    types.push_back(kByte);
  }
  // Pieces, breadth first: the alphabet, then each piece extended by frequent English letters, so
  // that every piece longer than one symbol can be built by merging two shorter pieces.
  // Letters first, so the short pieces that follow are English-like ("▁t", "th", "▁th", ...).
  std::vector<std::string> alphabet = {kSpace};
  for (char c = 'a'; c <= 'z'; ++c) alphabet.emplace_back(1, c);
  for (char c = 'A'; c <= 'Z'; ++c) alphabet.emplace_back(1, c);
  for (char c = '0'; c <= '9'; ++c) alphabet.emplace_back(1, c);
  for (char c = '!'; c <= '~'; ++c) {
    if (!std::isalnum(static_cast<unsigned char>(c))) alphabet.emplace_back(1, c);
  }
  const std::string extend = "etaoinshrdlucmfwypvbgkjqxz";
  std::unordered_set<std::string> seen;
  std::deque<std::string> queue(alphabet.begin(), alphabet.end());
  while (tokens.size() < n && !queue.empty()) {
    std::string piece = std::move(queue.front());
    queue.pop_front();
    if (!seen.insert(piece).second) continue;
    tokens.push_back(piece);
    types.push_back(kNormal);
    if (tokens.size() + queue.size() >= n) continue;  // enough candidates queued already
    for (char c : extend) queue.push_back(piece + c);
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  for (size_t k = 3 + 256; k < tokens.size(); ++k) scores[k] = -static_cast<float>(k - 259);

  w.set("tokenizer.ggml.model", gguf::make_string("llama"));
  w.set("tokenizer.ggml.tokens", gguf::make_string_array(tokens));
  w.set("tokenizer.ggml.scores", gguf::make_float32_array(scores));
  w.set("tokenizer.ggml.token_type", gguf::make_int32_array(types));
  w.set("tokenizer.ggml.bos_token_id", gguf::make_uint32(1));
  w.set("tokenizer.ggml.eos_token_id", gguf::make_uint32(2));
  w.set("tokenizer.ggml.unknown_token_id", gguf::make_uint32(0));
  w.set("tokenizer.ggml.add_bos_token", gguf::make_bool(true));
  w.set("tokenizer.ggml.add_eos_token", gguf::make_bool(false));
}

uint32_t copy_vocab(const gguf::GgufFile& source, gguf::GgufWriter& w) {
  const gguf::Value* tokens = source.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->type != gguf::ValueType::kArray || tokens->arr.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--vocab-from file has no tokenizer.ggml.tokens array");
  }
  for (const gguf::KeyValue& kv : source.metadata()) {
    if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
  }
  return static_cast<uint32_t>(tokens->arr.size());
}

}  // namespace vks::tools
