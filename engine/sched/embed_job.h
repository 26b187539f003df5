#pragma once
// One live embed request on the engine thread: one scheduler Sequence per input (prefill only,
// no prefix-cache reuse) and the pooler that turns the input's hidden-state rows into its vector.
#include <memory>
#include <string>
#include <vector>

#include "engine/model/pooling.h"
#include "engine/sched/engine.h"
#include "engine/sched/sequence.h"

namespace vks::sched {

struct EmbedInput {
  EmbedInput(std::vector<int32_t> tokens, Pooling pooling, size_t dim)
      : pooler(pooling, dim, static_cast<int32_t>(tokens.size())) {
    seq.tokens = std::move(tokens);
    seq.num_prompt_tokens = seq.num_tokens();
    seq.use_prefix_cache = false;  // every position's hidden state is needed
  }
  Sequence seq;
  EmbeddingPooler pooler;
  std::vector<float> vector;  // set once pooled
  bool done = false;
};

struct EmbedJob {
  std::string id;
  bool normalize = true;
  std::optional<Clock::time_point> deadline;
  std::vector<std::unique_ptr<EmbedInput>> inputs;  // stable addresses: the scheduler holds &seq
  int32_t remaining = 0;                            // inputs not pooled yet
  int32_t prompt_tokens = 0;                        // all inputs
  Clock::time_point submitted{};
  Clock::time_point first_scheduled{};
  bool scheduled_once = false;
};

}  // namespace vks::sched
