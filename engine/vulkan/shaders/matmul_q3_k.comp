#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q3_K
#define LOCAL_SIZE VKS_ROWS_LOCAL_SIZE
#define ROW_SLOTS 4u
#include "common_matmul.glsl"
#include "matmul_main.glsl"
