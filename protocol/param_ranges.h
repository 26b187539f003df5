#pragma once
// THE table of numeric generate-parameter ranges. The server's parser (protocol/requests.cpp), the
// C++ client's validation, the CLI's option checks and docs/PROTOCOL.md section 3.2 (checked by
// tests/protocol/doc_consistency_test.cpp) all read it, so the layers cannot disagree. The engine
// keeps its own defensive checks; tests/server/engine_translation_test.cpp proves it accepts every
// value this table accepts.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace vks::proto {

struct ParamRange {
  std::string_view name;   // the wire field
  double min = 0;
  double max = 0;
  bool min_exclusive = false;  // (min, max] instead of [min, max]
  bool integer = false;

  constexpr bool contains(double v) const {
    return (min_exclusive ? v > min : v >= min) && v <= max;  // NaN is never contained
  }
  // "0..100", "(0, 1]" or "-1..2^20": the notation of docs/PROTOCOL.md.
  std::string describe() const;
  // "must be in <range>" (+ ", got <v>" when given): the one wording every layer uses, after
  // "<name>: ".
  std::string violation(std::string_view got = {}) const;
};

namespace param {
inline constexpr ParamRange kTemperature{"temperature", 0, 100, false, false};
inline constexpr ParamRange kTopK{"top_k", 0, 1 << 20, false, true};
inline constexpr ParamRange kTopP{"top_p", 0, 1, true, false};
inline constexpr ParamRange kMinP{"min_p", 0, 1, false, false};
inline constexpr ParamRange kRepetitionPenalty{"repetition_penalty", 0, 100, true, false};
inline constexpr ParamRange kPresencePenalty{"presence_penalty", -100, 100, false, false};
inline constexpr ParamRange kFrequencyPenalty{"frequency_penalty", -100, 100, false, false};
inline constexpr ParamRange kPenaltyLastN{"penalty_last_n", -1, 1 << 20, false, true};
inline constexpr ParamRange kLogitBias{"logit_bias", -100, 100, false, false};  // each value
inline constexpr ParamRange kPriority{"priority", -1000, 1000, false, true};
}  // namespace param

// Every fixed range above, for table-driven consumers (doc test, CLI, client validation).
inline constexpr std::array<ParamRange, 10> kGenerateParamRanges = {
    param::kTemperature,      param::kTopK,           param::kTopP,          param::kMinP,
    param::kRepetitionPenalty, param::kPresencePenalty, param::kFrequencyPenalty, param::kPenaltyLastN,
    param::kLogitBias,        param::kPriority,
};

// Defaults the server applies to absent generate fields (docs/PROTOCOL.md 3.2).
namespace param_default {
inline constexpr int32_t kMaxTokensCap = 1 << 20;  // limits.max_tokens = 0 means this
}  // namespace param_default

}  // namespace vks::proto
