#pragma once
// The stories260K greedy reference (prompt "Once upon a time" with BOS, 60 generated tokens).
#include <cstdint>
#include <string>
#include <vector>

namespace vks::test {

struct GreedyReference {
  std::vector<int32_t> prompt_ids;     // BOS + "Once upon a time"
  std::vector<int32_t> generated_ids;  // 60 greedy tokens
  std::string text;                    // prompt + generation, as in the .txt file (ends with '\n')
};

// Reads reference/stories260K_greedy_once_upon_a_time_n64.{ids,txt} from models_dir().
GreedyReference load_greedy_reference();

inline constexpr const char* kReferencePrompt = "Once upon a time";

}  // namespace vks::test
