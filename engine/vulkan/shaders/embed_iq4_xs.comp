#version 450
#extension GL_GOOGLE_include_directive : require
#define WTYPE_IQ4_XS
#include "embed_body.glsl"
