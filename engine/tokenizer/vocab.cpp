#include "engine/tokenizer/vocab.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/common/error.h"
#include "engine/tokenizer/pretokenizer.h"

namespace vks {
namespace {

// An optional special-token id key; out-of-range values keep the default (llama.cpp behaviour).
void read_special_id(const gguf::GgufFile& file, std::string_view key, int32_t n_tokens, TokenId& id) {
  const std::optional<int64_t> v = file.get_int(key);
  if (v && *v >= 0 && *v < n_tokens) id = static_cast<TokenId>(*v);
}

// Token texts llama.cpp (llama-vocab.cpp) recognises as end of turn / end of message when the
// GGUF names no such id, and the wider set it stops generation at.
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>"  /* DeepSeek */, "<end_of_utterance>",
};
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>", "<|endoftext|>",
    "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
};

}  // namespace

Vocab Vocab::from_gguf(const gguf::GgufFile& file) {
  Vocab v;
  std::optional<std::string> model = file.get_string("tokenizer.ggml.model");
  if (!model) throw Error(ErrorCode::kCorrupt, "GGUF has no tokenizer: key tokenizer.ggml.model is missing");
  v.model = *model;
  const bool bpe = v.model == "gpt2";
  if (bpe) {  // llama.cpp's BPE defaults
    v.bos = 11;
    v.eos = 11;
    v.unk = -1;
    v.add_space_prefix = false;
  }
  if (std::optional<std::string> pre = file.get_string("tokenizer.ggml.pre")) v.pre = *pre;
  if (bpe) {
    v.add_bos = PreTokenizer::default_add_bos(v.pre);
    std::optional<std::vector<std::string>> merges = file.get_string_array("tokenizer.ggml.merges");
    if (!merges) throw Error(ErrorCode::kCorrupt, "BPE vocabulary has no tokenizer.ggml.merges");
    v.merges = std::move(*merges);
  }

  std::optional<std::vector<std::string>> tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty()) {
    throw Error(ErrorCode::kCorrupt, "tokenizer.ggml.tokens is missing or empty");
  }
  if (tokens->size() > static_cast<size_t>(INT32_MAX / 2)) {
    throw Error(ErrorCode::kCorrupt, "tokenizer.ggml.tokens has too many entries");
  }
  v.tokens = std::move(*tokens);
  const size_t n = v.tokens.size();

  if (std::optional<std::vector<float>> scores = file.get_float_array("tokenizer.ggml.scores")) {
    if (scores->size() != n) {
      throw Error(ErrorCode::kCorrupt, "tokenizer.ggml.scores has " + std::to_string(scores->size()) +
                                           " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) {
      // A NaN would break the merge queue's ordering.
      if (std::isnan((*scores)[i])) {
        throw Error(ErrorCode::kCorrupt, "tokenizer.ggml.scores[" + std::to_string(i) + "] is NaN");
      }
    }
    v.scores = std::move(*scores);
  } else {
    v.scores.assign(n, 0.0f);
  }

  if (std::optional<std::vector<int64_t>> types = file.get_int_array("tokenizer.ggml.token_type")) {
    if (types->size() != n) {
      throw Error(ErrorCode::kCorrupt, "tokenizer.ggml.token_type has " + std::to_string(types->size()) +
                                           " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    }
    v.types.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = (*types)[i];
      if (t < 0 || t > static_cast<int64_t>(TokenType::kByte)) {
        throw Error(ErrorCode::kCorrupt, "tokenizer.ggml.token_type[" + std::to_string(i) +
                                             "] = " + std::to_string(t) + " is not a token type (0..6)");
      }
      v.types[i] = static_cast<TokenType>(t);
    }
  } else {
    v.types.assign(n, TokenType::kNormal);
  }

  const auto n_tokens = static_cast<int32_t>(n);
  read_special_id(file, "tokenizer.ggml.bos_token_id", n_tokens, v.bos);
  read_special_id(file, "tokenizer.ggml.eos_token_id", n_tokens, v.eos);
  read_special_id(file, "tokenizer.ggml.unknown_token_id", n_tokens, v.unk);
  read_special_id(file, "tokenizer.ggml.eot_token_id", n_tokens, v.eot);
  read_special_id(file, "tokenizer.ggml.eom_token_id", n_tokens, v.eom);
  read_special_id(file, "tokenizer.ggml.padding_token_id", n_tokens, v.pad);
  read_special_id(file, "tokenizer.ggml.seperator_token_id", n_tokens, v.sep);  // old spelling
  read_special_id(file, "tokenizer.ggml.separator_token_id", n_tokens, v.sep);
  // Defaults that do not fit a small vocabulary mean "none".
  for (TokenId* id : {&v.bos, &v.eos, &v.unk}) {
    if (*id >= n_tokens) *id = -1;
  }
  if (std::optional<bool> b = file.get_bool("tokenizer.ggml.add_bos_token")) v.add_bos = *b;
  if (std::optional<bool> b = file.get_bool("tokenizer.ggml.add_eos_token")) v.add_eos = *b;
  if (std::optional<bool> b = file.get_bool("tokenizer.ggml.add_space_prefix")) v.add_space_prefix = *b;

  v.build_indexes();
  return v;
}

void Vocab::build_indexes() {
  text_to_id.clear();
  text_to_id.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) text_to_id[tokens[i]] = static_cast<TokenId>(i);

  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    TokenId id = find(name);
    if (id < 0) id = find(std::string(1, static_cast<char>(b)));  // llama.cpp's second choice
    byte_to_id[static_cast<size_t>(b)] = id;
  }

  detect_end_of_generation();

  special_tokens.clear();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const TokenType t = types[i];
    // An empty special string would match everywhere; it can never be split out.
    if ((t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) &&
        !tokens[i].empty()) {
      special_tokens.push_back(static_cast<TokenId>(i));
    }
  }
  std::stable_sort(special_tokens.begin(), special_tokens.end(), [this](TokenId a, TokenId b) {
    return tokens[static_cast<size_t>(a)].size() > tokens[static_cast<size_t>(b)].size();
  });
}

}  // namespace vks

namespace vks {

bool Vocab::is_eog(TokenId id) const {
  return id >= 0 && std::binary_search(eog_ids.begin(), eog_ids.end(), id);
}

void Vocab::detect_end_of_generation() {
  auto mark_control = [this](TokenId id) { types[static_cast<size_t>(id)] = TokenType::kControl; };
  if (eot < 0) {
    for (const std::string_view text : kEotTexts) {
      if (const TokenId id = find(std::string(text)); id >= 0) {
        eot = id;
        mark_control(id);
        break;
      }
    }
  }
  if (eom < 0) {
    if (const TokenId id = find("<|eom_id|>"); id >= 0) {
      eom = id;
      mark_control(id);
    }
  }
  eog_ids.clear();
  for (const std::string_view text : kEogTexts) {
    if (const TokenId id = find(std::string(text)); id >= 0) {
      eog_ids.push_back(id);
      mark_control(id);
    }
  }
  for (const TokenId id : {eos, eot, eom}) {
    if (valid(id)) eog_ids.push_back(id);
  }
  std::sort(eog_ids.begin(), eog_ids.end());
  eog_ids.erase(std::unique(eog_ids.begin(), eog_ids.end()), eog_ids.end());
}

}  // namespace vks
