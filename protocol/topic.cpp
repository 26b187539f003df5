#include "protocol/topic.h"

namespace vks::proto {

StreamToken random_stream_token() {
  std::random_device rd;
  StreamToken t{};
  for (size_t i = 0; i < t.size(); i += 4) {
    const uint32_t v = rd();
    for (size_t j = 0; j < 4; ++j) t[i + j] = static_cast<uint8_t>(v >> (8 * j));
  }
  return t;
}

StreamToken stream_token_from(std::mt19937_64& rng) {
  StreamToken t{};
  for (size_t i = 0; i < t.size(); i += 8) {
    const uint64_t v = rng();
    for (size_t j = 0; j < 8; ++j) t[i + j] = static_cast<uint8_t>(v >> (8 * j));
  }
  return t;
}

std::string to_hex(const StreamToken& token) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (size_t i = 0; i < token.size(); ++i) {
    s[2 * i] = kDigits[token[i] >> 4];
    s[2 * i + 1] = kDigits[token[i] & 0xf];
  }
  return s;
}

std::string topic_for(const StreamToken& token) { return std::string(kTopicPrefix) + to_hex(token); }

namespace {
bool is_lower_hex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}
}  // namespace

bool is_valid_topic(std::string_view topic) {
  return topic.size() == kTopicBytes && topic.substr(0, kTopicPrefix.size()) == kTopicPrefix &&
         is_lower_hex(topic.substr(kTopicPrefix.size()));
}

std::string new_request_id() { return to_hex(random_stream_token()); }

bool is_server_request_id(std::string_view id) { return id.size() == 32 && is_lower_hex(id); }

bool is_valid_client_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxClientIdBytes) return false;
  for (char c : id) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace vks::proto
