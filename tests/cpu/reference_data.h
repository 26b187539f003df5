#pragma once
// Loaders for the reference outputs in ../shared/models/reference (see the README there).
#include <cstdint>
#include <string>
#include <vector>

namespace vks::test {

struct GreedyReference {
  std::vector<int32_t> prompt;     // BOS + "Once upon a time"
  std::vector<int32_t> generated;  // the 60 greedy ids that follow
};

// Parses stories260K_greedy_once_upon_a_time_n64.ids: '#' comment lines, then the prompt ids line
// and the generated ids line.
GreedyReference load_greedy_reference();
std::string load_greedy_reference_text();   // ...n64.txt without the file's final newline
std::vector<float> load_reference_logits();  // stories260K_once_upon_a_time.step_logits.f32 [512]

}  // namespace vks::test

namespace vks::test {

// A `reference/*.greedy.ids` file of the next-wave fixtures: '#' comment lines, the prompt ids
// line, the generated ids line. Empty vectors when the file is missing.
GreedyReference load_ids_file(const std::string& reference_file);
// A little-endian float32 file under reference/ (logits [vocab] or [steps, vocab]); empty if missing.
std::vector<float> load_f32_file(const std::string& reference_file);

}  // namespace vks::test
