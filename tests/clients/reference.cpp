#include "tests/clients/reference.h"

#include <sstream>
#include <stdexcept>

#include "tests/clients/process_util.h"
#include "tests/common/test_models.h"

namespace vks::test {

GreedyReference load_greedy_reference() {
  const std::string base = models_dir() + "/reference/stories260K_greedy_once_upon_a_time_n64";
  std::istringstream ids(read_file(base + ".ids"));
  GreedyReference ref;
  std::string line;
  int numeric_line = 0;
  while (std::getline(ids, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream nums(line);
    int32_t v = 0;
    std::vector<int32_t>& dst = numeric_line == 0 ? ref.prompt_ids : ref.generated_ids;
    while (nums >> v) dst.push_back(v);
    ++numeric_line;
  }
  ref.text = read_file(base + ".txt");
  if (ref.prompt_ids.size() != 5 || ref.generated_ids.size() != 60 || ref.text.empty()) {
    throw std::runtime_error("cannot read the greedy reference at " + base + ".{ids,txt}");
  }
  return ref;
}

}  // namespace vks::test
