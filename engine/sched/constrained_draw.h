#pragma once
// One draw for a grammar-constrained request (engine/grammar): mask, sample, advance the grammar.
#include <span>
#include <string>

#include "engine/grammar/token_constraint.h"
#include "engine/sched/sampler.h"

namespace vks::sched {

// Samples from the logits restricted to what the grammar allows now (minus `suppressed`) and
// advances the grammar by the chosen token. False with `error` set when no token is possible
// (the grammar cannot continue, e.g. it is complete but min_tokens forbids EOS).
bool constrained_draw(grammar::TokenConstraint& constraint, Sampler& sampler, std::span<const float> logits,
                      std::span<const int32_t> history, std::span<const int32_t> suppressed, GeneratedToken& token,
                      std::string& error);

}  // namespace vks::sched
