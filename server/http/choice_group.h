#pragma once
// OpenAI's n > 1 on /v1/completions and /v1/chat/completions: one answer of n choices. Each choice
// is its own engine request, submitted like any other (choice i with the seed choice_wire derives
// from the request's), and the answer is put together here as the choices finish: choices in index
// order, usage counting the prompt once and the completion tokens of every choice (as OpenAI does).
// Choices 1..n-1 are submitted once choice 0 has its first token: its prompt is computed by then and
// its full KV blocks are registered in the prefix cache, so the others reuse them instead of
// computing the same prompt n times.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/http/api_common.h"
#include "server/http/generation.h"

namespace vks::server {
struct RenderedChat;  // server/chat_render.h: carried, never looked into here
}

namespace vks::http {

inline constexpr int32_t kMaxChoices = 16;

// The body's n (absent or null: 1); a 400 naming `n` unless it is an integer 1..kMaxChoices.
std::optional<ApiError> read_choice_count(const JsonBody& body, int32_t& n);

// The wire request of choice `index`: choice 0 is the request as sent (so it equals the same
// request with n = 1); a later one gets a seed mixed from the request's seed and its index, so
// seeded choices differ from each other and the whole answer is reproducible. Without a seed
// each choice draws its own, as any request does.
nlohmann::json choice_wire(const nlohmann::json& wire, int32_t index);

struct ChoiceGroup {
  int32_t n = 1;
  // Choice 0's chat rendering, which the later choices take (server/chat_render.h; null: not a chat).
  std::shared_ptr<const server::RenderedChat> rendered;
  // What choices 1..n-1 are submitted from, once choice 0 has its first token: choice 0's
  // generation before submission (group unset, so the group does not own itself) and wire request.
  Generation later;
  nlohmann::json later_wire;
  const std::map<std::string, std::string>* names = nullptr;  // the API's wire -> request field names
  bool later_submitted = false;
  bool failed = false;          // one choice failed: the answer is an error, the others were cancelled
  std::string answer_id;        // choice 0's request id: the answer's id and x-request-id
  uint64_t conn_id = 0;         // choice 0's exchange
  uint64_t exchange = 0;
  int32_t finished = 0;
  std::vector<nlohmann::json> usages;   // by index, once finished
  std::vector<nlohmann::json> answers;  // non-streamed: each choice's whole one-choice answer, by index
};

// Records that choice `index` finished with this usage (and, not streamed, this one-choice answer).
void add_finished_choice(ChoiceGroup& group, int32_t index, nlohmann::json usage, nlohmann::json answer = nullptr);
bool all_choices_finished(const ChoiceGroup& group);
// The usage of the whole answer: choice 0's prompt (and its cached tokens) once, every choice's
// completion tokens (and reasoning tokens) added.
nlohmann::json group_usage(const ChoiceGroup& group);
// The whole non-streamed answer: choice 0's answer with every choice, in index order, and group_usage.
nlohmann::json group_answer(const ChoiceGroup& group);

}  // namespace vks::http
