#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q6_K
// 16 rows per invocation, as q4_0, q8_0 and q4_k (VKS_ROW_SLOTS_Q6_K: why, in shader_params.h).
#define LOCAL_SIZE VKS_ROWS_LOCAL_SIZE
#define ROW_SLOTS VKS_ROW_SLOTS_Q6_K
#include "common_matmul.glsl"
#include "matvec_main.glsl"
