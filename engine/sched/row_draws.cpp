#include "engine/sched/row_draws.h"

#include "engine/sched/constrained_draw.h"

namespace vks::sched {

bool draw_rows(const RowDrawInput& in, Sampler& sampler, grammar::TokenConstraint* constraint,
               std::vector<int32_t>& history_scratch, std::vector<GeneratedToken>& out, std::string& error) {
  const size_t vocab = static_cast<size_t>(in.vocab);
  std::span<const int32_t> history = in.history;
  for (size_t i = 0; i <= in.draft.size(); ++i) {
    if (i == 1) history_scratch.assign(in.history.begin(), in.history.end());
    if (i >= 1) {  // penalties see the accepted draft tokens as plain decoding's history would
      history_scratch.push_back(in.draft[i - 1]);
      history = history_scratch;
    }
    const std::span<const float> row = in.rows.subspan(i * vocab, vocab);
    const bool drafted = i < in.draft.size();
    GeneratedToken token;
    bool accepted = false;
    if (constraint) {
      if (!constrained_draw(*constraint, sampler, row, history, in.suppressed, token, error)) return false;
      accepted = drafted && token.id == in.draft[i];
    } else if (drafted) {
      token = sampler.sample_with_draft(row, history, in.suppressed, in.draft[i], accepted);
    } else {
      token = sampler.sample(row, history, in.suppressed);
    }
    out.push_back(std::move(token));
    if (!accepted) break;
  }
  return true;
}

}  // namespace vks::sched
