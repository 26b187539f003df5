#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q6_K
// 16 rows per invocation, as q4_0, q8_0 and q4_k: each x load is shared by 16 rows, which is what
// lavapipe's per-lane loads need (at 4 rows, Q4_K decode ran at about half of Q4_0's speed).
#define LOCAL_SIZE 16u
#define ROW_SLOTS 16u
#include "common_matmul.glsl"
#include "matvec_main.glsl"
