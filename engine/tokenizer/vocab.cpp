#include "engine/tokenizer/vocab.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/common/error.h"

namespace vks {
namespace {

// An optional special-token id key; out-of-range values keep the default (llama.cpp behaviour).
void read_special_id(const gguf::GgufFile& file, std::string_view key, int32_t n_tokens, TokenId& id) {
  const std::optional<int64_t> v = file.get_int(key);
  if (v && *v >= 0 && *v < n_tokens) id = static_cast<TokenId>(*v);
}

}  // namespace

Vocab Vocab::from_gguf(const gguf::GgufFile& file) {
  Vocab v;
  std::optional<std::string> model = file.get_string("tokenizer.ggml.model");
  if (!model) throw Error(ErrorCode::kCorrupt, "GGUF has no tokenizer: key tokenizer.ggml.model is missing");
  v.model = *model;

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
