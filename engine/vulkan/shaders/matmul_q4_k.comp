#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q4_K
// 16 rows per invocation, as q4_0 and q8_0: each x load is shared by 16 rows. TinyLlama-shape
// Q4_K_M prefill (32 tokens) against Q4_0, same run (vks_bench_vulkan_versus, 4 pairs each, two
// runs per variant): 0.49 and 0.51 of Q4_0's tokens/s at 4 rows, 0.95 and 0.84 at 16. Cold
// compile of kquant-q4_k_m's pipelines: 15.1 s against 13.8 s at 4 rows (bench/cold_start.sh).
#define LOCAL_SIZE VKS_ROWS_LOCAL_SIZE
#define ROW_SLOTS VKS_ROW_SLOTS_Q4_K
#include "common_matmul.glsl"
#include "matmul_main.glsl"
