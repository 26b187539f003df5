#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q2_K
#define LOCAL_SIZE VKS_ROWS_LOCAL_SIZE
#define ROW_SLOTS VKS_ROW_SLOTS_Q2_K
#include "common_matmul.glsl"
#include "matmul_main.glsl"
