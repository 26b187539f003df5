#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_MXFP4
#include "embed_body.glsl"
