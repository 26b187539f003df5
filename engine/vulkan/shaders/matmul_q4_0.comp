#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q4_0
#define LOCAL_SIZE VKS_ROWS_LOCAL_SIZE
#define ROW_SLOTS 16u
#include "common_matmul.glsl"
#include "matmul_main.glsl"
