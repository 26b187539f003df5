#include "engine/sched/request_validation.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "engine/sched/draft_length.h"

namespace vks::sched {

namespace {
Rejection invalid(std::string msg) { return Rejection{ErrorCode::kInvalidArgument, std::move(msg)}; }
bool in_range(float v, float lo, float hi) { return v >= lo && v <= hi; }  // false for NaN
// The shortest text that reads back as v ("100.0001", not to_string's "100.000099").
std::string num(float v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return ec == std::errc() ? std::string(text, end) : std::to_string(v);
}
}  // namespace

bool valid_request_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
    else return false;
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    const uint32_t min_cp = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
    if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

std::optional<Rejection> check_params(const GenerateRequest& r, const SubmitLimits& lim) {
  if (!r.id.empty() && !valid_request_id(r.id)) {
    return invalid("id: must be 1..64 characters of [A-Za-z0-9._-]");
  }
  const SamplingParams& s = r.sampling;
  if (!in_range(s.temperature, 0.0f, 100.0f)) return invalid("temperature: must be in [0, 100], got " + num(s.temperature));
  if (s.top_k < 0) return invalid("top_k: must be >= 0 (0 = off), got " + std::to_string(s.top_k));
  if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) return invalid("top_p: must be in (0, 1], got " + num(s.top_p));
  if (!in_range(s.min_p, 0.0f, 1.0f)) return invalid("min_p: must be in [0, 1], got " + num(s.min_p));
  // The penalty ranges are those of protocol/param_ranges.h (docs/PROTOCOL.md 3.2).
  if (!(s.repetition_penalty > 0.0f && s.repetition_penalty <= 100.0f)) {
    return invalid("repetition_penalty: must be in (0, 100], got " + num(s.repetition_penalty));
  }
  if (!in_range(s.presence_penalty, -100.0f, 100.0f)) return invalid("presence_penalty: must be in -100..100, got " + num(s.presence_penalty));
  if (!in_range(s.frequency_penalty, -100.0f, 100.0f)) return invalid("frequency_penalty: must be in -100..100, got " + num(s.frequency_penalty));
  if (s.penalty_last_n < -1) return invalid("penalty_last_n: must be >= -1, got " + std::to_string(s.penalty_last_n));
  if (s.logit_bias.size() > kMaxLogitBias) return invalid("logit_bias: at most 1024 entries");
  for (const auto& [id, bias] : s.logit_bias) {
    if (id < 0 || id >= lim.vocab_size) {
      return invalid("logit_bias: unknown token id " + std::to_string(id) + " (vocabulary has " + std::to_string(lim.vocab_size) + ")");
    }
    if (!(in_range(bias, -100.0f, 100.0f) || bias == -INFINITY)) {
      return invalid("logit_bias: bias for token " + std::to_string(id) + " must be in [-100, 100] or -inf");
    }
  }
  const StopParams& st = r.stop;
  if (st.max_tokens < 0) return invalid("max_tokens: must be > 0 (or unset), got " + std::to_string(st.max_tokens));
  if (st.max_tokens > lim.max_new_tokens) {
    return invalid("max_tokens: " + std::to_string(st.max_tokens) + " exceeds the limit of " + std::to_string(lim.max_new_tokens) +
                   " by " + std::to_string(st.max_tokens - lim.max_new_tokens) +
                   " (leave max_tokens unset to generate until the context is full)");
  }
  if (st.min_tokens < 0 || (st.max_tokens > 0 && st.min_tokens > st.max_tokens)) return invalid("min_tokens: must be in [0, max_tokens], got " + std::to_string(st.min_tokens));
  if (st.stop_token_ids.size() > kMaxStopTokenIds) return invalid("stop_token_ids: at most 64 ids");
  for (TokenId id : st.stop_token_ids) {
    if (id < 0 || id >= lim.vocab_size) return invalid("stop_token_ids: unknown token id " + std::to_string(id));
  }
  if (st.stop_strings.size() > kMaxStopStrings) return invalid("stop_strings: at most 16 strings");
  for (const std::string& ss : st.stop_strings) {
    if (ss.empty() || ss.size() > kMaxStopStringBytes) return invalid("stop_strings: each must be 1..256 bytes");
    if (!valid_utf8(ss)) return invalid("stop_strings: must be valid UTF-8");
  }
  if (r.speculative && (*r.speculative < -1 || *r.speculative > kMaxDraftTokens)) {
    return invalid("speculative: must be false, true or a draft length in [0, 16], got " + std::to_string(*r.speculative));
  }
  if (r.logprobs < -1 || r.logprobs > kMaxLogprobs) return invalid("logprobs: must be in [-1, 20], got " + std::to_string(r.logprobs));
  if (r.priority < kMinPriority || r.priority > kMaxPriority) {
    return invalid("priority: must be in [-1000, 1000], got " + std::to_string(r.priority));
  }
  if (r.prompt_ids.empty() && r.prompt_text.empty()) return invalid("prompt: empty (give prompt or prompt_ids)");
  return std::nullopt;
}

std::optional<Rejection> check_prompt(std::span<const int32_t> ids, const SubmitLimits& lim, std::string_view field) {
  if (ids.empty()) return invalid(std::string(field) + ": the prompt has no tokens");
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= lim.vocab_size) {
      return invalid(std::string(field) + "[" + std::to_string(i) + "]: unknown token id " + std::to_string(ids[i]) +
                     " (vocabulary has " + std::to_string(lim.vocab_size) + ")");
    }
  }
  if (static_cast<int64_t>(ids.size()) > lim.max_prompt_tokens) {
    return invalid(std::string(field) + ": " + std::to_string(ids.size()) + " prompt tokens exceed the limit of " +
                   std::to_string(lim.max_prompt_tokens));
  }
  return std::nullopt;
}

int32_t room_to_generate(int32_t prompt_tokens, const SubmitLimits& lim) {
  const int64_t capacity = static_cast<int64_t>(lim.kv_blocks) * lim.block_size;
  int64_t room = std::min<int64_t>(lim.context_length, capacity) - prompt_tokens;
  if (lim.max_new_tokens > 0) room = std::min<int64_t>(room, lim.max_new_tokens);
  return static_cast<int32_t>(std::max<int64_t>(room, 0));
}

std::optional<Rejection> check_fits(int32_t prompt_tokens, int32_t max_tokens, const SubmitLimits& lim) {
  const int64_t capacity = static_cast<int64_t>(lim.kv_blocks) * lim.block_size;
  if (max_tokens == 0) {  // not set: whatever room is left, but at least one token
    if (prompt_tokens >= lim.context_length) {
      return invalid("prompt: " + std::to_string(prompt_tokens) + " tokens fill the whole context of " +
                     std::to_string(lim.context_length) + " tokens, leaving no room to generate");
    }
    if (prompt_tokens >= capacity) {
      return Rejection{ErrorCode::kOutOfMemory, "prompt: " + std::to_string(prompt_tokens) + " tokens fill the whole KV cache of " +
                                                    std::to_string(capacity) + " tokens, leaving no room to generate"};
    }
    return std::nullopt;
  }
  const int64_t total = static_cast<int64_t>(prompt_tokens) + max_tokens;
  const auto at_most = [&](int64_t limit) {
    return limit > prompt_tokens ? "at most " + std::to_string(limit - prompt_tokens) + " fit" : std::string("none fit");
  };
  if (total > lim.context_length) {
    return invalid("max_tokens: prompt (" + std::to_string(prompt_tokens) + " tokens) + max_tokens (" + std::to_string(max_tokens) +
                   ") exceeds the context length of " + std::to_string(lim.context_length) + " tokens by " +
                   std::to_string(total - lim.context_length) + " (" + at_most(lim.context_length) +
                   "; leave max_tokens unset to generate until the context is full)");
  }
  if (total > capacity) {
    return Rejection{ErrorCode::kOutOfMemory,
                     "max_tokens: prompt (" + std::to_string(prompt_tokens) + " tokens) + max_tokens (" + std::to_string(max_tokens) +
                         ") exceeds the whole KV cache of " + std::to_string(capacity) + " tokens (" +
                         std::to_string(lim.kv_blocks) + " blocks of " + std::to_string(lim.block_size) + ") by " +
                         std::to_string(total - capacity) + " (" + at_most(capacity) + ")"};
  }
  return std::nullopt;
}

}  // namespace vks::sched
