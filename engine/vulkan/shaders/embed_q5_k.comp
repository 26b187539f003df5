#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_Q5_K
#include "embed_body.glsl"
