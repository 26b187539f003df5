#include "engine/sched/stop_checker.h"

#include <algorithm>

namespace vks::sched {

StopChecker::StopChecker(const StopParams& params, const Tokenizer& tokenizer, std::span<const int32_t> prompt)
    // The generated text continues the prompt: its first piece keeps its leading space unless the
    // prompt ends with BOS.
    : params_(params), tokenizer_(tokenizer),
      detok_(tokenizer, !prompt.empty() && prompt.back() == tokenizer.bos()) {}

std::vector<int32_t> StopChecker::suppressed_for(int32_t n, std::span<const int32_t> eog_ids) const {
  std::vector<int32_t> ids;
  if (stops_allowed(n)) return ids;
  if (!params_.ignore_eos) ids.assign(eog_ids.begin(), eog_ids.end());
  ids.insert(ids.end(), params_.stop_token_ids.begin(), params_.stop_token_ids.end());
  return ids;
}

size_t StopChecker::find_stop() const {
  size_t best = std::string::npos;
  for (const std::string& s : params_.stop_strings) {
    if (!s.empty()) best = std::min(best, held_.find(s));
  }
  return best;
}

size_t StopChecker::partial_match_length() const {
  // Longest suffix of held_ that is a proper prefix of some stop string.
  size_t best = 0;
  for (const std::string& s : params_.stop_strings) {
    if (s.empty()) continue;
    for (size_t len = std::min(s.size() - 1, held_.size()); len > best; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        best = len;
        break;
      }
    }
  }
  return best;
}

StopOutcome StopChecker::on_token(TokenId id, int32_t n) {
  StopOutcome out;
  const bool allowed = stops_allowed(n);
  const bool stop_id = std::find(params_.stop_token_ids.begin(), params_.stop_token_ids.end(), id) !=
                       params_.stop_token_ids.end();
  if (allowed && (stop_id || (!params_.ignore_eos && tokenizer_.is_eog(id)))) {
    held_ += detok_.flush();
    out.text = std::move(held_);
    held_.clear();
    out.finish = FinishReason::kStop;
    return out;
  }
  held_ += detok_.push(id);
  const bool last = n >= params_.max_tokens;
  if (last) held_ += detok_.flush();
  if (allowed) {
    if (const size_t pos = find_stop(); pos != std::string::npos) {
      out.text = held_.substr(0, pos);
      held_.clear();
      out.finish = FinishReason::kStop;
      return out;
    }
  }
  if (last) {
    out.text = std::move(held_);
    held_.clear();
    out.finish = FinishReason::kLength;
    return out;
  }
  const size_t hold = partial_match_length();
  out.text = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopChecker::drain() {
  held_ += detok_.flush();
  std::string s = std::move(held_);
  held_.clear();
  return s;
}

}  // namespace vks::sched
