#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q6_K
// 8 rows per invocation (VKS_ROW_SLOTS_Q6_K; q4_0, q8_0 and q4_k take 16): at 16, lavapipe's cold
// compile of a Q4_K_M model's pipelines took 31.6 s instead of 14.7 s, for no decode speed the
// runner bench could tell apart from its noise; 8 against 4: about 20% faster (shader_params.h).
#define LOCAL_SIZE VKS_ROWS_LOCAL_SIZE
#define ROW_SLOTS VKS_ROW_SLOTS_Q6_K
#include "common_matmul.glsl"
#include "matvec_main.glsl"
