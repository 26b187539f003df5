#pragma once
// Speculative decoding for grammar-constrained requests: a draft token the grammar refuses would
// be rejected by the verification's masked draw anyway, so verifying it (and everything after it)
// would only cost rows.
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/grammar/token_constraint.h"

namespace vks::sched {

// `probe` set to `constraint`'s state (reusing its memory): a copy to walk drafts on.
grammar::TokenConstraint& reset_probe(const grammar::TokenConstraint& constraint,
                                      std::optional<grammar::TokenConstraint>& probe);

// Cuts `draft` before its first token that `constraint`'s current state (advanced by the tokens
// before it) refuses. `constraint` is unchanged: the walk runs on `probe`, the caller's reused copy.
void cut_draft_to_grammar(const grammar::TokenConstraint& constraint, std::optional<grammar::TokenConstraint>& probe,
                          std::vector<int32_t>& draft);

}  // namespace vks::sched
