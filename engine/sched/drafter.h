#pragma once
// Where speculative decoding's drafts come from. Before each step the engine asks its drafter for
// the drafts of every running decode at once (a draft model runs them as one batch per token);
// verification, acceptance and the draft's length are the engine's, whatever drafted.
#include <cstdint>
#include <memory>
#include <span>

#include "engine/grammar/token_constraint.h"
#include "engine/model/model_runner.h"
#include "engine/sched/sequence.h"

namespace vks::sched {

struct DraftJob {
  Sequence* seq = nullptr;  // drafts into seq->draft (cleared first): tokens guessed to follow seq->tokens
  int32_t max = 0;          // the most tokens to draft
  // A constrained request's grammar in its state now, a copy the drafter may advance: a draft model
  // drafts the best token it allows (its unconstrained pick is often one the grammar refuses, and
  // the draft would be cut there). Prompt lookup ignores it (its drafts are cut afterwards).
  grammar::TokenConstraint* grammar = nullptr;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Engine thread. Never throws: a drafter that cannot draft leaves drafts empty.
  virtual void draft(std::span<const DraftJob> jobs) = 0;
};

// Prompt lookup (ngram_drafter.h).
std::unique_ptr<Drafter> make_ngram_drafter();
// A second, small model with the target's vocabulary (model_drafter.h), on its own runner and KV
// pool, holding the K/V of up to `slots` sequences.
std::unique_ptr<Drafter> make_model_drafter(std::unique_ptr<ModelRunner> runner, int32_t slots);

}  // namespace vks::sched
