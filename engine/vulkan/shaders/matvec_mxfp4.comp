#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_MXFP4
#define LOCAL_SIZE VKS_ROWS_LOCAL_SIZE
#define ROW_SLOTS VKS_ROW_SLOTS_MXFP4
#include "common_matmul.glsl"
#include "matvec_main.glsl"
