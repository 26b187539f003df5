#pragma once
// Per-request stop conditions and text streaming. Text deltas come from an IncrementalDetokenizer
// (never half a UTF-8 character). Stop strings are matched across token boundaries: the text is
// held back only while its end could still be the start of a stop string, and a stop string (and
// whatever follows it) is never emitted. EOS (unless ignore_eos) and stop token ids end the request
// without emitting the stopping token's text. Before min_tokens no stop condition applies (the
// sampler also suppresses EOS/stop ids then).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/sched/engine.h"

namespace vks::sched {

struct StopOutcome {
  std::string text;                     // complete UTF-8 text to emit now
  std::optional<FinishReason> finish;   // set when the request ends with this token
};

class StopChecker {
 public:
  StopChecker(const StopParams& params, const Tokenizer& tokenizer, std::span<const int32_t> prompt);

  // Feeds the n-th generated token (n counts from 1).
  StopOutcome on_token(TokenId id, int32_t n);
  // Text still held back (when the request ends for another reason: cancel, deadline).
  std::string drain();
  // Ids the sampler must not choose for the n-th token (EOS and stop ids while n <= min_tokens).
  std::vector<int32_t> suppressed_for(int32_t n, std::span<const int32_t> eog_ids) const;

 private:
  bool stops_allowed(int32_t n) const { return n > params_.min_tokens; }
  // Finds the earliest stop string in held_; npos if none.
  size_t find_stop() const;
  size_t partial_match_length() const;

  StopParams params_;
  const Tokenizer& tokenizer_;
  IncrementalDetokenizer detok_;
  std::string held_;
};

}  // namespace vks::sched
