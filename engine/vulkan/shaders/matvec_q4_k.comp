#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q4_K
// 16 rows per invocation, as q4_0 and q8_0 (see matvec_q6_k.comp).
#define LOCAL_SIZE 16u
#define ROW_SLOTS 16u
#include "common_matmul.glsl"
#include "matvec_main.glsl"
