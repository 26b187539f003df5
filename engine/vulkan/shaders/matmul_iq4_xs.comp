#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_IQ4_XS
#define LOCAL_SIZE VKS_ROWS_LOCAL_SIZE
#define ROW_SLOTS VKS_ROW_SLOTS_IQ4_XS
#include "common_matmul.glsl"
#include "matmul_main.glsl"
