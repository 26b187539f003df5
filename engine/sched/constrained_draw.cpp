#include "engine/sched/constrained_draw.h"

#include <bit>
#include <cmath>

namespace vks::sched {

bool constrained_draw(grammar::TokenConstraint& constraint, Sampler& sampler, std::span<const float> logits,
                      std::span<const int32_t> history, std::span<const int32_t> suppressed, GeneratedToken& token,
                      std::string& error) {
  const grammar::TokenMask& mask = constraint.allowed();
  size_t possible = 0;
  for (uint64_t w : mask) possible += static_cast<size_t>(std::popcount(w));
  for (int32_t id : suppressed) {
    if (id >= 0 && static_cast<size_t>(id) < mask.size() * 64 && grammar::mask_has(mask, id)) --possible;
  }
  if (possible == 0) {
    error = constraint.overflowed()
                ? "grammar: too ambiguous to follow here (the matcher's limits were reached)"
                : "grammar: no token can continue the output here (the grammar is complete but EOS is not "
                  "allowed yet, or no vocabulary token fits)";
    return false;
  }
  if (!sampler.needs_full_logits(!suppressed.empty())) {
    // Plain greedy: the argmax over the allowed ids only, visiting set bits (no copy of the row).
    int32_t best = -1;
    for (size_t w = 0; w < mask.size(); ++w) {
      for (uint64_t bits = mask[w]; bits != 0; bits &= bits - 1) {
        const auto id = static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
        if (static_cast<size_t>(id) >= logits.size()) break;
        const float l = logits[static_cast<size_t>(id)];
        if (!std::isnan(l) && (best < 0 || l > logits[static_cast<size_t>(best)])) best = id;
      }
    }
    token = sampler.from_argmax(best < 0 ? 0 : best);
  } else {
    token = sampler.sample(logits, history, suppressed, &mask);
  }
  if (!constraint.accept(token.id)) {
    error = "grammar: no allowed token has a finite logit (logit_bias or penalties removed them all)";
    return false;
  }
  return true;
}

}  // namespace vks::sched
