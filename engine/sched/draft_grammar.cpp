#include "engine/sched/draft_grammar.h"

namespace vks::sched {

grammar::TokenConstraint& reset_probe(const grammar::TokenConstraint& constraint,
                                      std::optional<grammar::TokenConstraint>& probe) {
  if (probe) {
    *probe = constraint;  // reuses the state's memory
  } else {
    probe.emplace(constraint);
  }
  return *probe;
}

void cut_draft_to_grammar(const grammar::TokenConstraint& constraint, std::optional<grammar::TokenConstraint>& probe,
                          std::vector<int32_t>& draft) {
  if (draft.empty()) return;
  grammar::TokenConstraint& walk = reset_probe(constraint, probe);
  size_t allowed = 0;
  while (allowed < draft.size() && walk.accept(draft[allowed])) ++allowed;
  draft.resize(allowed);
}

}  // namespace vks::sched
