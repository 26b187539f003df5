#pragma once
// A generate chunk's draws from its full logits rows (sampling, logprobs, bias, penalties,
// grammar), one token or, after a draft of k tokens, the verification of that draft.
//
// Row i is the target's distribution after the request's tokens and draft[0, i) (the runner's
// verification rows, bit-identical to plain decoding's rows at those positions). Each row is drawn
// exactly as plain decoding draws its next token: the same Sampler call (processing, truncation,
// temperature, logprobs), the same grammar mask and advance, one RNG draw per token in order. The
// draw at row i is kept; draft[i] is accepted iff it equals that draw, and the first draw that
// differs (or the draw of row k, all accepted) is the last token of the step.
//
// This is the standard rejection scheme for a deterministic (point-mass) draft, drawn by inverse
// CDF with one uniform: draft[i] is accepted with probability p(draft[i]) and, when it is not, the
// token drawn is distributed as p with draft[i] removed and renormalised. Because it consumes the
// request's RNG exactly as plain decoding does, a seeded request gives the same tokens whatever
// was drafted, verified or accepted (draft length, cost model, batching): its output is plain
// decoding's seeded output, run to run.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/grammar/token_constraint.h"
#include "engine/sched/sampler.h"

namespace vks::sched {

struct RowDrawInput {
  std::span<const float> rows;        // [draft.size() + 1][vocab]
  int32_t vocab = 0;
  std::span<const int32_t> history;   // prompt + generated tokens, before the draft
  std::span<const int32_t> draft;     // the verified draft (empty for a plain decode)
  std::span<const int32_t> suppressed;  // ids banned at every row (EOS/stops before min_tokens)
};

// Appends to `out` the tokens the chunk emits: the accepted draft tokens and the target's next
// (out.size() - 1 drafts accepted). `constraint` (may be null) advances by exactly those tokens.
// history_scratch is the caller's reused buffer for history + accepted draft tokens. False with
// `error` set when the grammar cannot continue at some row (`out` then holds the rows before it).
bool draw_rows(const RowDrawInput& in, Sampler& sampler, grammar::TokenConstraint* constraint,
               std::vector<int32_t>& history_scratch, std::vector<GeneratedToken>& out, std::string& error);

}  // namespace vks::sched
