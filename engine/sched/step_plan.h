#pragma once
// One engine step, as schedule -> run -> postprocess pass it along (engine_step.cpp): what the
// scheduler chose, what each chunk is for, the batch the runner gets and what it returned. It is a
// member of the engine and reused, so a warm step allocates little.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/model/model_runner.h"
#include "engine/sched/engine.h"
#include "engine/sched/scheduler.h"

namespace vks::sched {

struct Request;
struct EmbedJob;

// What a scheduled chunk is for. Embed inputs are one more kind of sequence: they are scheduled,
// batched and postprocessed by the same code as generate requests, only their output differs.
enum class ChunkKind : uint8_t {
  kPrefill,   // a generate request's prompt chunk that does not end it: no output
  kGenerate,  // ends with the request's next token (and verifies its draft, if any)
  kEmbed,     // an embed input's chunk: every row's hidden state is pooled
};

struct PlannedChunk {
  ScheduledChunk chunk;
  ChunkKind kind = ChunkKind::kPrefill;
  Request* request = nullptr;  // kPrefill, kGenerate
  EmbedJob* embed = nullptr;   // kEmbed
  bool full_logits = false;    // kGenerate: sampled from logits rows rather than the device argmax
  int32_t logits_row = 0;      // kGenerate with full_logits: its first row in StepResult::logits
                               // (1 + chunk.n_draft rows: the verified positions', then the last's)
  int32_t hidden_row = 0;      // kEmbed: its first row in StepResult::hidden
  int32_t verify_row = 0;      // kGenerate with a draft: its first entry in StepResult::verify_argmax
  std::vector<int32_t> suppressed;  // kGenerate: ids banned for its draw (EOS/stops before min_tokens)
  // kGenerate, filled by the draw (on the sampling pool) and read when emitting.
  bool cancelled = false;      // a cancel arrived while the step ran: nothing is drawn or emitted
  // The tokens to emit: one, or after a draft the accepted draft tokens and the target's next.
  std::vector<GeneratedToken> tokens;
  std::string error;
  ErrorCode error_code = ErrorCode::kInternal;

  // A fresh chunk that keeps its token list's memory (the plan is reused step after step).
  void reset(const ScheduledChunk& c) {
    std::vector<GeneratedToken> keep = std::move(tokens);
    *this = PlannedChunk{};
    chunk = c;
    tokens = std::move(keep);
    tokens.clear();
  }
};

struct StepPlan {
  SchedulerOutput out;
  std::vector<PlannedChunk> chunks;  // out.chunks, in order
  StepBatch batch;
  StepResult result;
  int32_t n_full = 0;    // logits rows expected
  int32_t n_hidden = 0;  // hidden rows expected
  int32_t n_verify = 0;  // verify_argmax entries expected (every drafted chunk's n_draft)
  std::vector<size_t> draws;  // indexes of the chunks that draw a token (not cancelled)
  std::string failure;   // set by the run when the step failed
  ErrorCode failure_code = ErrorCode::kDevice;

  bool empty() const { return out.empty(); }
};

}  // namespace vks::sched
