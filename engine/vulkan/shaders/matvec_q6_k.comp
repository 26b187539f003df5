#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q6_K
// 4 rows per invocation (not 16 as q4_0): a quarter of the unrolled code, so lavapipe compiles the
// K-quant kernels in seconds; every output keeps the same fma chain (see common_matmul.glsl).
#define LOCAL_SIZE 64u
#define ROW_SLOTS 4u
#include "common_matmul.glsl"
#include "matvec_main.glsl"
