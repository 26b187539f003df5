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
  // For a drafter that follows_grammar(): a constrained request's grammar in its state now, a copy
  // the drafter advances as it drafts the best token it allows (a draft model's unconstrained pick
  // is often one the grammar refuses, and the draft would be cut there). Null otherwise.
  grammar::TokenConstraint* grammar = nullptr;
};

// A draft() call's feeding of sequences' tokens to the drafter before it drafts (a draft model's
// catch-up: a step's new tokens, or a whole prompt the first time).
struct FeedCost {
  int64_t tokens = 0;       // fed, all sequences
  int64_t most_for_one = 0;  // the most fed for one sequence
  double ms = 0;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Engine thread. Never throws: a drafter that cannot draft leaves drafts empty.
  virtual void draft(std::span<const DraftJob> jobs) = 0;
  // The tokens of `seq` a draft for it would first feed the drafter (prompt lookup: none): a shadow
  // probe's price includes feeding them (a request's first probe feeds its whole prompt).
  virtual int32_t unfed_tokens(const Sequence& /*seq*/) const { return 0; }
  // The last draft() call's feeding.
  virtual FeedCost last_feed() const { return {}; }
  // Whether it drafts within DraftJob::grammar; if not, the engine cuts a constrained request's
  // draft at the first token its grammar refuses.
  virtual bool follows_grammar() const { return false; }
  // Whether how often its drafts are right is the drafter's own more than the text's (a draft
  // model, against the target: a pair): a new request then starts from its record over finished
  // requests (DraftLength::start_from). Prompt lookup's depends on each request's text.
  virtual bool acceptance_carries_over() const { return false; }
};

// Prompt lookup (ngram_drafter.h).
std::unique_ptr<Drafter> make_ngram_drafter();
// A second, small model with the target's vocabulary (model_drafter.h), on its own runner and KV
// pool, holding the K/V of up to `slots` sequences.
std::unique_ptr<Drafter> make_model_drafter(std::unique_ptr<ModelRunner> runner, int32_t slots);

}  // namespace vks::sched
