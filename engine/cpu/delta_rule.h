#pragma once
// The gated delta rule of one value head (Gated DeltaNet, Qwen3.5's linear attention), token after
// token of one sequence:
//   S = decay S;  u = beta (v - S^T k);  S += k ⊗ u;  o = scale S^T q
// with S [d][d] (row i: key index i, column c: value index c). Every element of S, u and o sees its
// operations in one fixed order (sums over i ascending, from 0), so any split of the columns
// gives the same bits: a level computing 16 columns at once (AVX-512), 8 (AVX2) or 4 (the baseline)
// agrees with the rule written out, which the tests check.
//
// Columns never mix (u[c], o[c] and S[.][c] read only column c), so the rule runs a block of
// columns at a time, through every token of the run, with u and o in registers: a block's part of
// S (128 rows x 64 columns: 32 KiB) stays in the L1 cache for the whole run, and each token is one
// pass over it that also sums the next token's S^T k (its decay recomputed, the same bits). Written
// token by token over all of S (two passes a token, u and o in memory) the rule had been 18.8% of a
// Qwen3.5 0.8B-shape prefill's samples (perf over vks_bench_cpu_reference -p 128 -n 1); see
// vks_bench_delta_rule for what each level costs.
#include <cstddef>

#include "engine/cpu/attention_level.h"

namespace vks::ref {

// A run of n consecutive tokens of one sequence through one head: token t's q, k and v at q, k, v
// + t * qkv_stride (d floats each), its decay and beta at decay, beta + t * gate_stride, its output
// written at o + t * o_stride (d floats). Outputs do not overlap S or the inputs.
struct DeltaRuleTokens {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  size_t qkv_stride = 0;
  const float* decay = nullptr;
  const float* beta = nullptr;
  size_t gate_stride = 0;
  float* o = nullptr;
  size_t o_stride = 0;
  size_t n = 0;
};

// S [d][d] goes through the run's tokens in order.
void delta_rule(float* S, const DeltaRuleTokens& tokens, float scale, size_t d,
                AttendLevel level = fastest_attend_level());

}  // namespace vks::ref
