#include "server/http/token_api.h"

#include <limits>
#include <utility>

namespace vks::http {

using nlohmann::json;

namespace {

std::optional<ApiError> read_bool(const JsonBody& body, const char* key, bool& out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return bad_field(std::string(key) + " must be a boolean", key);
  out = it->get<bool>();
  return std::nullopt;
}

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

std::variant<TokenizeHttpRequest, ApiError> map_tokenize(const JsonBody& body) {
  TokenizeHttpRequest out;
  const auto it = body.find("content");
  if (it == body.end() || it->is_null()) return bad_field("content is required", "content", "missing_field");
  if (!it->is_string()) return bad_field("content must be a string", "content");
  out.content = it->get<std::string>();
  for (auto [key, flag] : {std::pair<const char*, bool*>{"add_special", &out.add_special},
                           {"parse_special", &out.parse_special}, {"with_pieces", &out.with_pieces}}) {
    if (auto e = read_bool(body, key, *flag)) return std::move(*e);
  }
  return out;
}

json tokenize_answer(const std::vector<proto::TokenId>& ids, bool with_pieces, const TokenText& piece) {
  json tokens = json::array();
  for (proto::TokenId id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    const std::string text = piece(id);
    json p;
    if (valid_utf8(text)) {
      p = text;
    } else {
      p = json::array();
      for (unsigned char ch : text) p.push_back(ch);
    }
    tokens.push_back({{"id", id}, {"piece", std::move(p)}});
  }
  return {{"tokens", std::move(tokens)}};
}

std::variant<std::vector<proto::TokenId>, ApiError> map_detokenize(const JsonBody& body, int32_t vocab_size) {
  const auto it = body.find("tokens");
  if (it == body.end() || it->is_null()) return bad_field("tokens is required", "tokens", "missing_field");
  if (!it->is_array()) return bad_field("tokens must be an array of token ids", "tokens");
  std::vector<proto::TokenId> ids;
  ids.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const JsonBody& v = (*it)[i];
    const std::string at = "tokens." + std::to_string(i);
    if (!v.is_number_integer()) return bad_field(at + " must be an integer token id", at);
    const int64_t id = v.get<int64_t>();
    if (id < 0 || id >= vocab_size) {
      return bad_field("token id " + std::to_string(id) + " is outside the vocabulary (0.." + std::to_string(vocab_size - 1) + ")", at);
    }
    ids.push_back(static_cast<proto::TokenId>(id));
  }
  return ids;
}

JsonBody count_tokens_body(const JsonBody& body) {
  JsonBody copy = body;
  if (copy.is_object() && (!copy.contains("max_tokens") || copy["max_tokens"].is_null())) copy["max_tokens"] = 1;
  return copy;
}

}  // namespace vks::http
