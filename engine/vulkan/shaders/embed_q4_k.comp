#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q4_K
#include "embed_body.glsl"
