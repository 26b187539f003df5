#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q4_K
// 16 rows per invocation, as q4_0 and q8_0: each x load is shared by 16 rows, which lavapipe's
// per-lane loads need (vks_bench_vulkan_kernels, TinyLlama shapes: 1.7-2.3x Q4_0's time at 4 rows in
// one run; 0.6-1.7x, median 0.8, over four runs at 16).
#define LOCAL_SIZE VKS_ROWS_LOCAL_SIZE
#define ROW_SLOTS VKS_ROW_SLOTS_Q4_K
#include "common_matmul.glsl"
#include "matvec_main.glsl"
