#include "tests/cpu/reference_data.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "tests/common/test_models.h"

namespace vks::test {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

GreedyReference load_greedy_reference() { return load_ids_file("stories260K_greedy_once_upon_a_time_n64.ids"); }

GreedyReference load_ids_file(const std::string& reference_file) {
  std::istringstream in(read_all(model_path("reference/" + reference_file)));
  std::vector<std::vector<int32_t>> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    for (int32_t id; ls >> id;) ids.push_back(id);
    lines.push_back(ids);
  }
  GreedyReference ref;
  if (lines.size() >= 2) {
    ref.prompt = lines[0];
    ref.generated = lines[1];
  }
  return ref;
}

std::string load_greedy_reference_text() {
  std::string text = read_all(model_path("reference/stories260K_greedy_once_upon_a_time_n64.txt"));
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::vector<float> load_reference_logits() { return load_f32_file("stories260K_once_upon_a_time.step_logits.f32"); }

std::vector<float> load_f32_file(const std::string& reference_file) {
  const std::string bytes = read_all(model_path("reference/" + reference_file));
  std::vector<float> logits(bytes.size() / sizeof(float));
  std::memcpy(logits.data(), bytes.data(), logits.size() * sizeof(float));
  return logits;
}

}  // namespace vks::test
