#include "server/http/choice_group.h"

namespace vks::http {

using nlohmann::json;

std::optional<ApiError> read_choice_count(const JsonBody& body, int32_t& n) {
  n = 1;
  auto it = body.find("n");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxChoices) {
    return bad_field("n must be an integer 1.." + std::to_string(kMaxChoices) + " (choices in the answer)", "n");
  }
  n = static_cast<int32_t>(it->get<int64_t>());
  return std::nullopt;
}

namespace {

// splitmix64's finaliser: nearby inputs (seed, seed + 1) give unrelated outputs, so choice i of
// seed s is not choice 0 of seed s + i.
uint64_t mix_seed(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

json choice_wire(const json& wire, int32_t index) {
  json out = wire;
  if (index == 0) return out;
  auto seed = out.find("seed");
  // A seed the wire would refuse is left for it to refuse (choice 0 was refused first).
  if (seed == out.end() || !(seed->is_number_unsigned() || (seed->is_number_integer() && seed->get<int64_t>() >= 0))) {
    return out;
  }
  *seed = mix_seed(seed->get<uint64_t>() ^ (static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ull));
  return out;
}

void add_finished_choice(ChoiceGroup& group, int32_t index, json usage, json answer) {
  if (group.usages.empty()) {
    group.usages.resize(static_cast<size_t>(group.n));
    group.answers.resize(static_cast<size_t>(group.n));
  }
  group.usages[static_cast<size_t>(index)] = std::move(usage);
  group.answers[static_cast<size_t>(index)] = std::move(answer);
  ++group.finished;
}

bool all_choices_finished(const ChoiceGroup& group) { return group.finished >= group.n; }

json group_usage(const ChoiceGroup& group) {
  json usage = group.usages.empty() ? json::object() : group.usages[0];
  int64_t completion = 0;
  int64_t reasoning = 0;
  bool any_reasoning = false;
  for (const json& u : group.usages) {
    if (!u.is_object()) continue;
    completion += u.value("completion_tokens", int64_t{0});
    if (auto d = u.find("completion_tokens_details"); d != u.end() && d->is_object()) {
      any_reasoning = true;
      reasoning += d->value("reasoning_tokens", int64_t{0});
    }
  }
  usage["completion_tokens"] = completion;
  usage["total_tokens"] = usage.value("prompt_tokens", int64_t{0}) + completion;
  if (any_reasoning) usage["completion_tokens_details"] = {{"reasoning_tokens", reasoning}};
  return usage;
}

json group_answer(const ChoiceGroup& group) {
  json answer = group.answers.empty() ? json::object() : group.answers[0];
  json choices = json::array();
  for (const json& one : group.answers) {
    if (!one.is_object() || !one.contains("choices")) continue;
    for (const json& choice : one["choices"]) choices.push_back(choice);
  }
  answer["choices"] = std::move(choices);
  answer["usage"] = group_usage(group);
  return answer;
}

}  // namespace vks::http
