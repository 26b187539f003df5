#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q4_0
#define LOCAL_SIZE 32u
#define ROW_SLOTS 8u
#include "common_matmul.glsl"
#include "matmul_main.glsl"
