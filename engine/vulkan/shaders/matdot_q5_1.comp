#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q5_1
#define INT8_DOT
#include "shader_params.h"
#define LOCAL_SIZE VKS_LANES
#define ROW_SLOTS VKS_LANES_ROWS
#include "common_matmul.glsl"
#include "matlanes_main.glsl"
