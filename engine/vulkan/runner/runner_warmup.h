#pragma once
// Runs a few throw-away steps on a freshly built runner so that every kernel a real request will
// use is compiled before the daemon reports READY. lavapipe (and other drivers) compile a pipeline
// lazily at its first dispatch, not at vkCreateComputePipelines: without this the first request
// after READY waited 15-22 s on a cold shader cache, with nothing said.
#include <cstdint>

#include "engine/model/model_runner.h"

namespace vks {

struct WarmUpReport {
  int32_t steps = 0;          // forward passes run
  double milliseconds = 0.0;  // wall time of all of them
};

// Covers the step shapes the scheduler produces: a prefill chunk large enough for the matrix-matrix
// kernels with full logits (sampling), a single-sequence decode with the device argmax (greedy),
// and a two-sequence decode. Uses KV blocks 0..k, which hold no sequence yet at start-up (the
// scheduler overwrites every slot before attention reads it). Throws what ModelRunner::step throws.
WarmUpReport warm_up_runner(ModelRunner& runner);

}  // namespace vks
