#pragma once
// The utility endpoints that need the model's tokenizer or template but no generation:
// llama.cpp's POST /tokenize, /detokenize, /apply-template and Anthropic's
// POST /v1/messages/count_tokens. Here: their request checks and answer shapes (pure JSON); the
// front end runs the tokenizer and the template on libuv's pool.
#include <nlohmann/json.hpp>

#include <string>
#include <variant>
#include <vector>

#include "server/http/api_common.h"
#include "server/http/generation.h"

namespace vks::http {

struct TokenizeHttpRequest {
  std::string content;
  bool add_special = false;   // llama.cpp's defaults: no BOS ...
  bool parse_special = true;  // ... but control-token text becomes the control token
  bool with_pieces = false;   // answer [{id, piece}] instead of ids
};

std::variant<TokenizeHttpRequest, ApiError> map_tokenize(const JsonBody& body);
// {"tokens": [ids]} or, with pieces, {"tokens": [{"id", "piece"}]}: a piece that is not valid
// UTF-8 on its own (part of a character) is its byte values, as llama.cpp's server sends it.
nlohmann::json tokenize_answer(const std::vector<proto::TokenId>& ids, bool with_pieces, const TokenText& piece);

// {"tokens": [ids]} -> the ids, each inside the vocabulary.
std::variant<std::vector<proto::TokenId>, ApiError> map_detokenize(const JsonBody& body, int32_t vocab_size);

// count_tokens takes a Messages request without max_tokens: the body given one (it bounds
// nothing here) so that map_anthropic_messages reads the rest as it would for /v1/messages.
JsonBody count_tokens_body(const JsonBody& body);

}  // namespace vks::http
