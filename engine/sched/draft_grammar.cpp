#include "engine/sched/draft_grammar.h"

namespace vks::sched {

void cut_draft_to_grammar(const grammar::TokenConstraint& constraint, std::optional<grammar::TokenConstraint>& probe,
                          std::vector<int32_t>& draft) {
  if (draft.empty()) return;
  if (probe) {
    *probe = constraint;  // reuses the state's memory
  } else {
    probe.emplace(constraint);
  }
  size_t allowed = 0;
  while (allowed < draft.size() && probe->accept(draft[allowed])) ++allowed;
  draft.resize(allowed);
}

}  // namespace vks::sched
