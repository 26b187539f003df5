#pragma once
// The gated delta rule of one value head for one token (Gated DeltaNet, Qwen3.5's linear attention):
//   S = decay S;  u = beta (v - S^T k);  S += k ⊗ u;  o = scale S^T q
// with S [d][d] (row i: key index i, column c: value index c). Each loop runs over c inside i, so
// every element of S, u and o sees its operations in one fixed order: a level computing 16 columns
// at once (AVX-512), 8 (AVX2) or 4 (the baseline) gives the same bits, and the tests compare them
// with the loop written out. On the baseline's four lanes the DeltaNet mixer had been 10.6% of a
// Qwen3.5 0.8B-shape run's samples (perf over vks_bench_cpu_reference -p 128 -n 32), the largest
// part after the matrix kernels.
#include <cstddef>

#include "engine/cpu/attention_level.h"

namespace vks::ref {

// update: scratch [d]; o: [d]. S, q, k, v, update and o do not overlap.
void delta_rule(float* S, const float* q, const float* k, const float* v, float decay, float beta, float scale,
                size_t d, float* update, float* o, AttendLevel level = fastest_attend_level());

}  // namespace vks::ref
