// The 4x8-bit packed signed dot product of VK_KHR_shader_integer_dot_product (OpSDot with
// PackedVectorFormat4x8Bit): sdot4(a, b) = sum of the four int8 bytes of a times those of b, exact in
// int32. Debian 12's glslang has no GL_EXT_integer_dot_product, so the instruction is declared
// through GL_EXT_spirv_intrinsics (SPIR-V opcode 4450; capabilities DotProductInput4x8BitPacked
// 6018 and DotProduct 6019). Pipelines with it are built only on devices with the feature
// (DeviceInfo::integer_dot).
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019], id = 4450)
int sdot4_packed(uint a, uint b, spirv_literal int packed_vector_format);
int sdot4(uint a, uint b) { return sdot4_packed(a, b, 0); }
