#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_F32
#define LOCAL_SIZE VKS_ROWS_LOCAL_SIZE
#define ROW_SLOTS VKS_ROW_SLOTS_F32
#include "common_matmul.glsl"
#include "matvec_main.glsl"
